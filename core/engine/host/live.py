"""A run as the host holds it while it is awake: its agent session and its scheduling state.

Only awake runs are held in memory. A run whose session has slept is forgotten entirely — its
cursor, session state and transcript are in the database — and is loaded again on its next
nudge, so ten thousand idle conversations cost nothing but rows.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime

from core import tracing
from core.engine.host.attempt import Attempted
from core.engine.host.ownership import Owned
from core.engine.host.slots import HeldSlots, Slot
from core.engine.runtimes.base import AgentSession
from core.engine.tools import ToolBudget
from core.model.runs.run import Run, RunId, SessionId
from core.model.tasks import TaskId
from core.model.timeline import ThreadId


@dataclass(slots=True, eq=False)
class LiveRun:
    thread_id: ThreadId | None
    role: str
    task_id: TaskId | None = None
    """Set for a run on a task (which has no thread)."""
    run_id: RunId | None = None
    run: Run | None = None
    """The run as this host last knew it (None: read it again). Every write checks the cursor it
    was based on, so a stale copy can only cost a dropped turn end, never a doubled reply."""
    owned: Owned | None = None
    """This host's claim on the run (None: not claimed, or lost); its writes as the owner name
    the claim's fence (`core.engine.host.ownership`)."""
    elsewhere_until: int = 0
    """Another replica holds the run until then (µs since the epoch; 0: not known to)."""
    elsewhere_by: str | None = None
    """That replica: once its heartbeat stops, what is known of the run is over."""
    missed: bool = False
    """Nudges came while the run was held elsewhere: look again when that is over."""
    recheck: asyncio.TimerHandle | None = None
    generation: int = 0
    """Bumped by "start fresh": a turn that began before it must not cache its old session."""
    session: AgentSession | None = None
    session_id: SessionId | None = None
    resumable: bool = False
    """The session's state is stored: once let go, it sleeps (and can be woken)."""
    token: str | None = None
    """The run token the session was given (a runtime whose agent calls its tools from outside
    the gateway), revoked when the session is let go."""
    last_used: float = 0.0
    """Monotonic time the session last finished a turn (idle sleep counts from here)."""
    nudged: bool = False
    """News arrived since the driver last read: read again when the current turn ends."""
    tasks_pending: bool = True
    """Task news may be waiting: read it too. True when the run is loaded here (after a restart
    or a wake) and whenever a task it watches changes; the read clears it."""
    queued_at: datetime | None = None
    waiting: tracing.Waiting = field(default_factory=tracing.Waiting)
    """The traced nudges since the run's last turn began (`core.tracing`)."""
    driving: asyncio.Task[None] | None = None
    """The loop that reads and runs turns while nudges keep coming; None when idle."""
    attempt: asyncio.Task[Attempted] | None = None
    """The running attempt at a turn (what `cancel` stops)."""
    deadline: asyncio.Timeout | None = None
    """The running attempt's timeout (the role's `turn_timeout`), while one runs here."""
    slots_here: tuple[Slot, ...] = ()
    """This host's slots the driver holds while it reads and takes a turn."""
    slots: HeldSlots | None = None
    """Every slot the running turn holds (lent back while it waits for a person)."""
    tool_budget: ToolBudget | None = None
    """The tool calls the running attempt may still make (None between turns)."""
    cancel_requested: bool = False
    turn_ended: asyncio.Event = field(default_factory=asyncio.Event)
    unstored_ends: int = 0
    """Turn ends in a row that did not commit (`TurnTaker._store_end`)."""
    troubles: int = 0
    """Reads or turns in a row that raised: the driver tries again after a backoff that grows
    with them (`RunHost._drive`)."""

    @property
    def busy(self) -> bool:
        return self.driving is not None


@contextlib.asynccontextmanager
async def hold_turn(live: LiveRun, longest: float) -> AsyncIterator[None]:
    """While the run waits up to `longest` seconds for a person, its turn's timeout does not
    count — the deadline moves out by the longest wait, then back to what was left of it — and
    its slots are lent back, to be taken again (before the deadline moves back) when the wait
    ends."""
    slots = live.slots
    lent = slots.lent() if slots is not None else contextlib.nullcontext()
    deadline = live.deadline
    when = deadline.when() if deadline is not None else None
    if deadline is None or when is None or deadline.expired():
        async with lent:
            yield
        return
    loop = asyncio.get_running_loop()
    left = max(when - loop.time(), 0.0)
    deadline.reschedule(loop.time() + longest + left)
    try:
        async with lent:
            yield
    finally:
        if live.deadline is deadline and not deadline.expired():
            deadline.reschedule(loop.time() + left)
