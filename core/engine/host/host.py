"""The run host: when a run is prompted, and with what resources.

    host = RunHost(database, roles, Runtimes())
    await host.start()     # recovery: runs with news past their cursor are nudged again
    host.nudge(thread_id, "concierge")
    await host.stop()

Rules, in the order a nudge meets them:

- **Nudge, then read.** Committed events only nudge (`nudge`); the router nudges every role member
  of a thread in which someone else posted a message. It learns of commits from storage's
  after-commit listener (`Database.listen`), in this process, and never hands a run an event: the
  driver reads. A nudged run's driver reads from the database everything past the run's cursor.
  Nudges that arrive while a run is busy set one flag: they collapse into a single next read, hence
  a single next turn.
- **One turn at a time per run** (per-thread FIFO): a run has one driving loop, and it takes turns
  one after another while news keeps arriving.
- **Slots.** A turn holds its role's slot (`max_concurrent_turns`, or one for a role with
  `concurrent_threads: false`, which serialises all its turns) and one of the host's `slots`.
  Different threads run concurrently: a slow turn holds only its own run's loop. With replicas
  the role's limit holds across all of them: a turn also holds one of the role's cluster slots
  (`core.engine.host.slots`). A turn waiting for a person's answer lends all of them back
  until the answer comes (`hold_turn`).
- **Idle sleep.** A session unused for the role's `idle_sleep_after` is closed and the run is
  forgotten here (its state is stored with every turn); the next nudge wakes it: the runtime
  resumes the same session from its stored state.
- **Control pre-empts work.** `cancel` stops the running attempt at once; the turn ends as
  cancelled and the run stays usable.
- **Task news.** A committed task event nudges every run subscribed to the task, except the run
  that made the change, and the task run of the task's assignee (created when first needed);
  their drivers read the news past each run's task cursor.
- **Failures retry.** A read, or a turn's end, that fails to commit leaves the news past the
  cursor; the run reads again after a backoff (doubling, up to `RETRY_MOST`), so it answers its
  news once storage takes the write. A turn's end refused `HostLimits.attempts` times in a row
  is stored as a failed turn instead (`TurnTaker._store_end`).
- **Restart.** Nothing is handed to a run in memory only: on `start`, every role member whose run
  has not looked at its thread's latest event, and every run with task news past its task
  cursor, is nudged again.
- **Traces.** A nudge by a committed event this process committed is a `rolecall.nudge` span
  of the event's trace, kept with the run; the next turn continues that trace (`core.tracing`).
- **Replicas.** With several replicas on one database, a run is driven only by the host that
  holds its lease (`ownership`, `core.engine.host.ownership`): a nudged run is claimed before
  it is read, writes as its owner are fenced, a run put to sleep is released, and `take_over`
  nudges the runs whose owner died or handed them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from core import tracing
from core.engine.approvals import HoldTurn, no_hold
from core.engine.host.conversation_turn import ConversationTurn
from core.engine.host.drafts import Draft, DraftListener
from core.engine.host.live import LiveRun, hold_turn
from core.engine.host.observer import HostObserver, NoObserver
from core.engine.host.ownership import HeldElsewhere, Ownership, SoleOwner
from core.engine.host.reads import TurnReads
from core.engine.host.remote import RemoteControl
from core.engine.host.sessions import Sessions, ToolGrant
from core.engine.host.slots import HeldSlots, Slot, SoleSlots, TurnSlots, semaphore_slot
from core.engine.host.task_turn import TaskTurn
from core.engine.host.turn import HostLimits, RunTurn, TurnEndNotStored, TurnTaker
from core.engine.runtimes.base import ToolAccess
from core.engine.runtimes.registry import Runtimes
from core.engine.tools.budget import LocalBudgets, ToolBudget, ToolBudgets
from core.model.errors import Conflict, NotFound
from core.model.leases import Fence, LeaseKind, LeaseLost
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.roles.role import Role
from core.model.roles.roster import Roster
from core.model.runs.conversation import plan_turn
from core.model.runs.run import Run, RunId, RunKind, RunStatus, TurnOutcome
from core.model.runs.task import plan_task_turn
from core.model.tasks import TaskEvent, TaskId
from core.model.timeline import AnyEvent, Message, ThreadId
from core.storage.database import Database
from core.storage.errors import StorageUnavailable
from core.storage.rows import to_micros

__all__ = ["HostLimits", "RunHost"]

log = logging.getLogger("rolecall.host")

ROLE_CACHE_LIMIT = 100_000
LOOK_AGAIN_MARGIN = 0.05
KNOWN_HELD = 60_000_000
"""µs a run found held by another replica is left to it while that replica beats (its
heartbeat renews the lease); then, or once its heartbeat stops, it is looked at again."""
"""Seconds after another replica's lease would end that a run nudged meanwhile is looked at."""
FRESH_WAIT = 2.0
"""Seconds "start fresh" waits for the replica driving the run to let its old session go."""
RETRY_MOST = 30.0
"""Seconds at most between a failed read or turn's end of a run and its next try."""


def _unrouted(what: str, error: Exception) -> None:
    """Log a commit that could not be routed now (it is routed again): an outage in a line, any
    other failure with its traceback."""
    if isinstance(error, StorageUnavailable):
        log.warning("routing %s waits: %s", what, error)
    else:
        log.error("routing %s failed; it is tried again", what, exc_info=error)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """The runs a host holds now (`RunHost.held`), for the overview's counts."""

    running: frozenset[RunId]
    """A turn of each runs here."""
    awake: frozenset[RunId]
    """Each one's session is held here, no turn of it runs."""
    opened: frozenset[RunId]
    """Of those, the ones whose stored session was ever opened, as this host last read them."""
    unread: frozenset[RunId]
    """Of those, the ones this host holds no copy of (it reads them again before their next
    turn): what the store knows of them is asked for."""


class RunHost:
    def __init__(
        self,
        database: Database,
        roles: Mapping[str, Role],
        runtimes: Runtimes,
        *,
        limits: HostLimits | None = None,
        clock: Callable[[], datetime] = _utc_now,
        observer: HostObserver | None = None,
        tools_url: str | None = None,
        ownership: Ownership | None = None,
        tool_budgets: ToolBudgets | None = None,
        slots: TurnSlots | None = None,
        roster: Roster | None = None,
    ) -> None:
        """`tools_url`: the gateway's base URL as agents outside this process reach it; with
        it, runtimes that want tools get a fresh token of their run at every session start,
        revoked when the session is let go. `ownership`: who runs which run when replicas
        share the database (default: this host runs them all). `tool_budgets`: where turns' tool
        calls are counted (default: in this process; `SharedBudgets` when replicas share the
        database); `slots`: the roles' turn slots across replicas (default: this host's own
        are the whole limit); `roster`: the roles the runs' tools accept as assignees (default:
        the roles this host serves)."""
        self._db = database
        self._roster = roster or Roster.of(roles)
        self._owner: Ownership = ownership or SoleOwner()
        self._cluster_slots: TurnSlots = slots or SoleSlots()
        self._roles = dict(roles)
        self._limits = limits or HostLimits()
        self._clock = clock
        self._observer = observer or NoObserver()
        grant = self._tool_grant(tools_url.rstrip("/")) if tools_url else None
        self._sessions = Sessions(
            runtimes, self._observer, grant=grant, revoke=database.runs.revoke_token
        )
        self._activity_listeners: list[Callable[[ThreadId, str, bool], None]] = []
        self._draft_listeners: list[DraftListener] = []
        self._tool_budgets = tool_budgets or LocalBudgets()
        self._stopping = False
        self._turns = TurnTaker(
            self._sessions,
            self._limits,
            clock,
            self._observer,
            self._tool_budgets,
            stopping=self.is_stopping,
        )
        self._reads = TurnReads(database, limit=self._limits.read_limit, recent=self._limits.recent)
        self._live: dict[tuple[str, str, str], LiveRun] = {}
        """Awake runs by ("thread", thread id, role) or ("task", task id, role)."""
        self._by_run: dict[RunId, LiveRun] = {}
        self._slots = asyncio.Semaphore(self._limits.slots)
        self._in_use = 0
        self._role_slots = {
            name: asyncio.Semaphore(role.max_concurrent_turns if role.concurrent_threads else 1)
            for name, role in self._roles.items()
        }
        self._roles_of: dict[ThreadId, tuple[str, ...]] = {}
        self._background: list[asyncio.Task[None]] = []
        self._committed: list[Message] = []
        self._task_news: list[TaskEvent] = []
        self._commits = asyncio.Event()
        self._stop_listening: Callable[[], None] | None = None
        self._control: RemoteControl | None = None

    def _tool_grant(self, base: str) -> ToolGrant:
        async def grant(run: Run) -> ToolAccess:
            token = await self._db.runs.mint_token(run.id, session_id=run.session.id)
            return ToolAccess(token, mcp_url=f"{base}/mcp", http_url=f"{base}/api/v1/tools")

        return grant

    def watch_activity(self, listener: Callable[[ThreadId, str, bool], None]) -> Callable[[], None]:
        """Call `listener(thread, role, working)` when a conversation turn starts (True) and
        ends (False); returns the function that stops it. Listeners must be quick."""
        self._activity_listeners.append(listener)
        return lambda: self._activity_listeners.remove(listener)

    def watch_drafts(self, listener: DraftListener) -> Callable[[], None]:
        """Call `listener` with the pieces of conversation replies as agents write them
        (`core.engine.host.drafts`); returns the function that stops it. Listeners must be quick."""
        self._draft_listeners.append(listener)
        return lambda: self._draft_listeners.remove(listener)

    def _tell_draft(self, draft: Draft) -> None:
        for listener in self._draft_listeners:
            try:
                listener(draft)
            except Exception:
                log.exception("a draft listener failed")

    def _tell_activity(self, thread_id: ThreadId, role: str, working: bool) -> None:
        for listener in self._activity_listeners:
            try:
                listener(thread_id, role, working)
            except Exception:
                log.exception("an activity listener failed")

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self._stop_listening = self._db.listen(self._on_commit)
        replica, messenger = self._owner.replica, self._db.notifications
        if replica is not None and messenger is not None:
            self._control = RemoteControl(messenger, replica, self._act)
            await self._control.start()
        for thread_id, role in await self._db.runs.conversations_with_news():
            self.nudge(thread_id, role)
        for thread_id, role in await self._db.subscriptions.runs_with_news():
            self.nudge(thread_id, role, tasks=True)
        for task_id, role in await self._db.runs.tasks_with_news():
            self.nudge_task(TaskId(task_id), role)
        self._background = [
            asyncio.create_task(self._route(), name="rolecall-router"),
            asyncio.create_task(self._sweep(), name="rolecall-idle-sleep"),
        ]

    def mark_stopping(self) -> None:
        """The gateway is stopping: a turn stopped from now on is stopped for a restart (or a
        takeover), not by anyone's choice — the question it waits on stays open for its rerun."""
        self._stopping = True

    def is_stopping(self) -> bool:
        return self._stopping

    async def stop(self) -> None:
        """Stop routing; stop running turns (their news is past the cursor: redone on start);
        let every session go."""
        self.mark_stopping()
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        if self._control is not None:
            await self._control.stop()
            self._control = None
        tasks = self._background + [live.driving for live in self._live.values() if live.driving]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for live in list(self._live.values()):
            if live.recheck is not None:
                live.recheck.cancel()
            await self._sessions.close(live)
        self._live.clear()
        self._by_run.clear()

    # --- nudges -----------------------------------------------------------------------------

    def nudge(
        self, thread_id: ThreadId, role: str, *, tasks: bool = False, cause: str | None = None
    ) -> None:
        """Something may be new for `role`'s run in the thread (`tasks`: in the tasks it
        watches): read it soon. `cause`: the id of the committed event that is news (its
        trace goes on in the turn)."""
        if role not in self._roles:
            return  # a role without a manifest here has no run to wake
        key = ("thread", thread_id, role)
        live = self._live.get(key)
        if live is None:
            live = self._live[key] = LiveRun(thread_id=thread_id, role=role)
        live.tasks_pending = live.tasks_pending or tasks
        if cause is not None and tracing.on():
            tracing.nudge(live.waiting, cause, **{"rolecall.role": role})
        self._wake(live)

    def nudge_task(self, task_id: TaskId, role: str, *, cause: str | None = None) -> None:
        """Something may be new on a task assigned to `role`: its task run reads it soon."""
        if role not in self._roles:
            return
        key = ("task", task_id, role)
        live = self._live.get(key)
        if live is None:
            live = self._live[key] = LiveRun(thread_id=None, role=role, task_id=task_id)
        if cause is not None and tracing.on():
            tracing.nudge(live.waiting, cause, **{"rolecall.role": role})
        self._wake(live)

    def _wake(self, live: LiveRun) -> None:
        live.nudged = True
        if live.driving is None:
            live.queued_at = self._clock()
            live.driving = asyncio.create_task(self._drive(live))

    def _on_commit(self, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        """Storage's after-commit listener (no I/O here): a message whose thread's role members
        are known nudges them at once; other messages and task events go to the router, which
        may have to read. (Each hop between tasks costs a turn of the event loop, which under
        load is a millisecond or more of a round trip's latency.)"""
        if not self._roles:
            return  # no role is served here: no run to nudge
        routed_later = False
        for event in events:
            if not isinstance(event, Message):
                continue
            roles = self._roles_of.get(event.thread_id)
            if roles is None:
                self._committed.append(event)
                routed_later = True
            else:
                self._nudge_members(event, roles)
        if task_events:
            self._task_news.extend(task_events)
            routed_later = True
        if routed_later:
            self._commits.set()

    def _nudge_members(self, message: Message, roles: Sequence[str]) -> None:
        """Nudge the thread's role members but the message's author."""
        for role in roles:
            if message.author != Address(f"role:{role}"):
                self.nudge(message.thread_id, role, cause=message.id)

    async def _route(self) -> None:
        """Turn commits into nudges: a message, for its thread's other role members; a task
        event, for the runs watching the task (but the one that made it) and the task run of
        its assignee. What cannot be routed now (the database is out of reach) is routed again
        after a pause that doubles, up to `RETRY_MOST`: it is news nobody else would wake."""
        troubles = 0
        while True:
            await self._commits.wait()
            self._commits.clear()
            messages, self._committed = self._committed, []
            task_events, self._task_news = self._task_news, []
            unrouted_tasks = [e for e in task_events if not await self._route_task_event(e)]
            unrouted = [m for m in messages if not await self._route_message(m)]
            if not unrouted and not unrouted_tasks:
                troubles = 0
                continue
            self._committed[:0] = unrouted
            self._task_news[:0] = unrouted_tasks
            troubles += 1
            await asyncio.sleep(min(self._limits.backoff * 2 ** (troubles - 1), RETRY_MOST))
            self._commits.set()

    async def _route_task_event(self, event: TaskEvent) -> bool:
        """Nudge the runs `event` is news to; False when that could not be read."""
        try:
            watchers, assignee = await self._db.subscriptions.routes(event.task_id)
        except Exception as error:
            _unrouted(f"an event of task {event.task_id}", error)
            return False
        for run_id, thread_id, role in watchers:
            if run_id != event.actor.run_id:  # not woken by what it did itself
                self.nudge(thread_id, role, tasks=True, cause=event.id)
        if assignee is not None:
            self.nudge_task(event.task_id, assignee, cause=event.id)  # (it skips its own events)
        return True

    async def _route_message(self, message: Message) -> bool:
        """Nudge the role members of `message`'s thread; False when they could not be read."""
        try:
            roles = await self._roles_in(message.thread_id)
        except Exception as error:
            _unrouted(f"a message of thread {message.thread_id}", error)
            return False
        self._nudge_members(message, roles)
        return True

    async def _roles_in(self, thread_id: ThreadId) -> tuple[str, ...]:
        """The thread's role members (membership is permanent, so this is cached)."""
        found = self._roles_of.get(thread_id)
        if found is None:
            thread = await self._db.threads.get(thread_id)
            found = tuple(
                address.removeprefix("role:")
                for address, _state in thread.participants
                if kind_of(address) is ParticipantKind.ROLE
            )
            if len(self._roles_of) >= ROLE_CACHE_LIMIT:
                self._roles_of.clear()
            self._roles_of[thread_id] = found
        return found

    # --- driving a run ----------------------------------------------------------------------

    async def _drive(self, live: LiveRun) -> None:
        """Read and take turns while nudges keep coming. A read or a turn's end that fails (the
        database refused it, or was out of reach) leaves the news past the cursor; so the run
        is not left to wait for its next nudge — or a restart — but read again after a backoff
        that doubles with each failure in a row, up to `RETRY_MOST` seconds."""
        try:
            while live.nudged:
                live.nudged = False
                try:
                    await self._read_and_turn(live)
                except LeaseLost:
                    await self._lost(live)
                except Exception as failure:
                    where = f"task {live.task_id}" if live.task_id else f"thread {live.thread_id}"
                    if isinstance(failure, TurnEndNotStored):  # logged where it happened
                        log.info("run of role:%s on %s: its turn is taken again", live.role, where)
                    else:
                        log.exception("run of role:%s on %s failed", live.role, where)
                    live.run = None  # read again: what was committed is what counts
                    live.troubles += 1
                    delay = self._limits.backoff * 2 ** (live.troubles - 1)
                    await asyncio.sleep(min(delay, RETRY_MOST))
                    live.nudged = True
                else:
                    live.troubles = 0
        finally:
            live.driving = None

    async def _read_and_turn(self, live: LiveRun) -> None:
        role = self._roles[live.role]
        if live.task_id is not None:
            async with self._slot(live, role):
                await self._read_and_task_turn(live, role, live.task_id)
            return
        assert live.thread_id is not None
        async with self._slot(live, role):
            runs = self._db.runs
            if live.run is None:  # (re)loaded: what it may have missed includes task news
                live.tasks_pending = True
                live.run = await self._conversation_run(live.thread_id, live.role)
                live.run_id = live.run.id
                self._by_run[live.run.id] = live
            if not await self._own(live):
                return
            if live.run is None:  # claimed just now: read the run as its last owner left it
                live.run = await runs.get(live.run_id)
            with_tasks, live.tasks_pending = live.tasks_pending, False
            waited = live.waiting.take()  # the nudges this read answers
            given = await self._reads.read(live.run, with_tasks=with_tasks)
            plan = plan_turn(
                given.page.events,
                role=role.address,
                cursor=given.run.cursor,
                read_to=given.page.next,
                task_news=given.tasks.news,
                task_cursor=given.run.task_cursor,
                task_read_to=given.tasks.read_to,
            )
            if given.page.more or given.tasks.more:
                live.nudged = True  # the rest is read for the next turn
                live.tasks_pending = live.tasks_pending or given.tasks.more
            if not plan.wakes:
                if plan.advance:
                    live.run = await runs.advance_cursor(
                        given.run, plan.cursor_to, plan.task_cursor_to, fence=_fence(live)
                    )
                return
            turn = ConversationTurn(
                self._db,
                role,
                given,
                plan,
                limits=self._limits,
                activity=self._tell_activity,
                drafts=self._tell_draft,
                fence=_fence(live),
                roster=self._roster,
            )
            await self._take(live, role, turn, waited)
            live.queued_at = self._clock()

    async def _read_and_task_turn(self, live: LiveRun, role: Role, task_id: TaskId) -> None:
        runs = self._db.runs
        if live.run is None:
            live.run = await self._task_run(task_id, live.role)
            live.run_id = live.run.id
            self._by_run[live.run.id] = live
        if not await self._own(live):
            return
        if live.run is None:  # claimed just now: read the run as its last owner left it
            live.run = await runs.get(live.run_id)
        waited = live.waiting.take()
        given = await runs.task_turn_input(live.run, limit=self._limits.read_limit)
        plan = plan_task_turn(
            given.task,
            given.events,
            run_id=live.run.id,
            cursor=given.run.task_cursor,
            read_to=given.read_to,
        )
        if given.more:
            live.nudged = True
        if not plan.wakes:
            if plan.task_cursor_to > given.run.task_cursor:
                live.run = await runs.advance_task_cursor(
                    given.run, plan.task_cursor_to, fence=_fence(live)
                )
            return
        turn = TaskTurn(self._db, role, given, plan, fence=_fence(live), roster=self._roster)
        await self._take(live, role, turn, waited)
        live.queued_at = self._clock()

    async def _take(
        self, live: LiveRun, role: Role, turn: RunTurn[Any], waited: tracing.Waiting
    ) -> None:
        """Take the turn holding one of the role's cluster slots too; the turn may lend them
        all back while it waits for a person (`LiveRun.slots`). `waited`: the nudges it
        answers (its trace)."""
        async with self._cluster_slots.turn(role) as cluster:
            here = live.slots_here
            live.slots = HeldSlots([*here, cluster] if cluster is not None else here)
            try:
                await self._turns.take(live, role, turn, waited=waited)
            finally:
                live.slots = None

    async def _conversation_run(self, thread_id: ThreadId, role: str) -> Run:
        """The role's run in the thread, made if need be. With replicas it is looked for first
        (a read): every replica hears of every run, and most are not theirs to drive."""
        if self._owner.replica is not None:
            for run in await self._db.runs.of_thread(thread_id):
                if run.role == role and run.kind is RunKind.CONVERSATION:
                    return run
        run, _ = await self._db.runs.ensure_conversation_run(thread_id, role)
        return run

    async def _task_run(self, task_id: TaskId, role: str) -> Run:
        """The role's run on the task, made if need be (looked for first, with replicas)."""
        if self._owner.replica is not None:
            for run in await self._db.runs.of_task(task_id):
                if run.role == role:
                    return run
        run, _ = await self._db.runs.ensure_task_run(task_id, role)
        return run

    async def _own(self, live: LiveRun) -> bool:
        """Whether this host may drive the run: it holds it, or claims it now (then the run is
        read again: `live.run` is None). False: another replica holds it and was nudged too."""
        if live.owned is not None:
            return True
        assert live.run_id is not None
        now = to_micros(self._clock())
        if now < live.elsewhere_until:  # its holder has it: look once more when that may end
            live.missed = True
            self._look_again(live, (live.elsewhere_until - now) / 1e6)
            return False
        claim = await self._owner.claim(live.run_id, thread_id=live.thread_id, now=now)
        if isinstance(claim, HeldElsewhere):  # (what is kept of the run is read again if claimed)
            known = max(claim.until, now + KNOWN_HELD) if claim.holder is not None else claim.until
            live.elsewhere_until, live.elsewhere_by = known, claim.holder
            return False
        live.owned, live.elsewhere_until, live.elsewhere_by = claim, 0, None
        if claim.fence is not None:
            live.run = None
        return True

    def _look_again(self, live: LiveRun, after: float) -> None:
        if live.recheck is not None or self._stop_listening is None:
            return

        def look() -> None:
            live.recheck = None
            if live.missed and self._stop_listening is not None:
                live.missed, live.elsewhere_until, live.elsewhere_by = False, 0, None
                self._wake(live)

        live.recheck = asyncio.get_running_loop().call_later(after + LOOK_AGAIN_MARGIN, look)

    async def _lost(self, live: LiveRun) -> None:
        """Another replica took the run over (this one stalled past its lease): let go of it
        without writing anything; its new owner answers what is pending."""
        log.warning("run %s: another replica holds it now; this one lets it go", live.run_id)
        live.owned, live.run = None, None
        await self._sessions.close(live)

    def holders_alive(self, alive: set[str]) -> None:
        """The replicas whose heartbeat is current (the replica's own heartbeat read them): a
        run known held by any other is no longer known held — its lease is expiring or was
        let go — and is looked at at once if nudges came meanwhile."""
        for live in self._live.values():
            if live.elsewhere_by is None or live.elsewhere_by in alive:
                continue
            live.elsewhere_until, live.elsewhere_by = 0, None
            if live.recheck is not None:
                live.recheck.cancel()
                live.recheck = None
            if live.missed and self._stop_listening is not None:
                live.missed = False
                self._wake(live)

    def keep_held(self, held: set[str]) -> None:
        """The replica's heartbeat found these runs still held by it; any other run this host
        thinks it holds was lost (its next write as the owner would be refused anyway)."""
        for run_id, live in self._by_run.items():
            if live.owned is not None and live.owned.fence is not None and run_id not in held:
                live.owned = None

    async def take_over(self) -> int:
        """Nudge the runs of the roles served here whose lease expired while held (their
        replica died or stalled) or was handed back (their replica stopped); the claims decide
        which replica drives each. How many were nudged."""
        now = to_micros(self._clock())
        orphans = await self._db.leases.orphaned_runs(now=now, roles=sorted(self._roles))
        for orphan in orphans:
            if orphan.task_id is not None:
                key: tuple[str, str, str] = ("task", orphan.task_id, orphan.role)
            elif orphan.thread_id is not None:
                key = ("thread", orphan.thread_id, orphan.role)
            else:
                continue
            known = self._live.get(key)
            if known is not None:  # what it knew of the lease is over: look now
                known.elsewhere_until, known.elsewhere_by = 0, None
            if orphan.task_id is not None:
                self.nudge_task(TaskId(orphan.task_id), orphan.role)
            else:
                self.nudge(ThreadId(key[1]), orphan.role, tasks=True)
        return len(orphans)

    def owned(self) -> int:
        """Runs this host holds the lease of."""
        return sum(1 for live in self._by_run.values() if live.owned is not None)

    @contextlib.asynccontextmanager
    async def _slot(self, live: LiveRun, role: Role) -> AsyncIterator[None]:
        """The role's slot and one of the host's, for reading and taking a turn."""
        slots = (semaphore_slot(self._role_slots[role.name]), self._host_slot())
        try:
            for slot in slots:
                await slot.take()
            live.slots_here = slots
            yield
        finally:
            live.slots_here = ()
            for slot in reversed(slots):
                await slot.give()

    def _host_slot(self) -> Slot:
        async def take() -> None:
            await self._slots.acquire()
            self._in_use += 1
            self._observer.slots_in_use(self._in_use)

        async def give() -> None:
            self._slots.release()
            self._in_use -= 1
            self._observer.slots_in_use(self._in_use)

        return Slot(take, give)

    # --- idle sleep -------------------------------------------------------------------------

    async def _sweep(self) -> None:
        shortest = min((r.idle_sleep_after for r in self._roles.values()), default=60.0)
        every = min(max(shortest / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(every)
            await self.sleep_idle()

    async def sleep_idle(self) -> int:
        """Put to sleep every session unused for its role's `idle_sleep_after`; forget idle runs.
        The sessions are closed all at once (an agent process may take a while to end)."""
        now = time.monotonic()
        held_elsewhere = to_micros(self._clock())
        idle = [
            (key, live)
            for key, live in self._live.items()
            if not live.busy
            and live.elsewhere_until <= held_elsewhere  # what it knows saves reads: kept
            and (
                live.session is None
                or now - live.last_used >= self._roles[live.role].idle_sleep_after
            )
        ]
        closing = [self._sessions.close(live) for _, live in idle if live.session is not None]
        await asyncio.gather(*closing)
        released: list[tuple[RunId, Fence]] = []
        for key, live in idle:
            if live.busy or live.session is not None or self._live.get(key) is not live:
                continue  # nudged while the sessions were closing
            del self._live[key]
            if live.run_id is not None:
                self._by_run.pop(live.run_id, None)
                fence = _fence(live)
                if fence is not None:
                    released.append((live.run_id, fence))
            live.owned = None
        for run_id, fence in released:
            try:
                await self._owner.release(run_id, fence)
            except Exception as error:  # it expires instead
                log.warning("run %s: its lease could not be released now: %s", run_id, error)
        return len(closing)

    # --- control ----------------------------------------------------------------------------

    def tool_budget(self, run_id: RunId) -> ToolBudget | None:
        """The tool calls the run's running turn may still make, if a turn of it runs here: the
        tool surfaces (HTTP and MCP) count the agent's calls against it; else the running
        attempt's wherever it runs (`tool_budgets`: shared by replicas), or None."""
        live = self._by_run.get(run_id)
        here = live.tool_budget if live is not None else None
        return here if here is not None else self._tool_budgets.find(run_id)

    def hold_turn(self, run_id: RunId) -> HoldTurn:
        """What keeps the run's running turn's timeout from counting while one of its tool calls
        waits for a person, when a turn of it runs here (elsewhere: nothing to hold)."""
        live = self._by_run.get(run_id)
        return partial(hold_turn, live) if live is not None else no_hold

    def is_awake(self, run_id: RunId) -> bool:
        live = self._by_run.get(run_id)
        return live is not None and live.session is not None

    def held(self) -> Held:
        """What the runs held here are doing, and what this host knows of their sessions."""
        running: set[RunId] = set()
        awake: set[RunId] = set()
        opened: set[RunId] = set()
        unread: set[RunId] = set()
        for run_id, live in self._by_run.items():
            if live.attempt is not None:
                running.add(run_id)
            elif live.session is not None:
                awake.add(run_id)
            else:
                continue
            if live.run is None:
                unread.add(run_id)
            elif live.run.session.opened:
                opened.add(run_id)
        return Held(
            running=frozenset(running),
            awake=frozenset(awake),
            opened=frozenset(opened),
            unread=frozenset(unread),
        )

    def is_running(self, run_id: RunId) -> bool:
        live = self._by_run.get(run_id)
        return live is not None and live.attempt is not None

    def stop_turn(self, run_id: RunId) -> LiveRun | None:
        """Tell the run's running turn to stop, without waiting for it: its attempt is
        cancelled, and a turn between attempts (one just ended, the next not begun) begins no
        other. The run, or None when no turn of it was running here."""
        live = self._by_run.get(run_id)
        if live is None or live.attempt is None:
            return None
        live.cancel_requested = True
        live.attempt.cancel()
        return live

    async def cancel(self, run_id: RunId, *, wait: float = 5.0) -> bool:
        """Stop the run's running turn at once, here or on the replica that holds the run.
        False when no turn of it was running."""
        if await self._cancel_here(run_id, wait=wait):
            return True
        holder = await self._holder_elsewhere(run_id)
        if holder is None or self._control is None:
            return False
        return bool(await self._control.ask(holder, "cancel", run_id, wait=wait + 1))

    async def _cancel_here(self, run_id: RunId, *, wait: float) -> bool:
        live = self.stop_turn(run_id)
        if live is None:
            return False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await live.turn_ended.wait()
        return True

    async def start_fresh(self, run_id: RunId) -> Run:
        """Open a new session in the same conversation (see `StartFreshSession`); the host
        that drives the run — this one, or another replica's — lets the old session go."""
        run = await self._db.runs.get(run_id)
        if run.kind is not RunKind.CONVERSATION:
            raise Conflict("only a conversation run can start fresh", code="not_a_conversation")
        if run.role not in self._roles:
            raise NotFound(f"no role named {run.role!r} is configured", code="role_not_found")
        fresh, _note = await self._db.runs.start_fresh(run)
        await self._forget_session(run_id)
        holder = await self._holder_elsewhere(run_id)
        if holder is not None and self._control is not None:
            await self._control.ask(holder, "fresh", run_id, wait=FRESH_WAIT)
        return fresh

    async def retry(self, run_id: RunId) -> Run:
        """Take a failed conversation run's last turn again: its cursor goes back to where that
        turn began (a compare-and-set on the cursors the failed turn left), and the host that
        drives the run — this one, or another replica's — reads from there, so the person's
        message is answered by a new turn. `not_failed` (409) when the run is ready or its last
        turn did not fail; `run_moved` (409) when something moved its cursor meanwhile."""
        run = await self._db.runs.get(run_id)
        if run.kind is not RunKind.CONVERSATION:
            raise Conflict("only a conversation run can be retried", code="not_a_conversation")
        if run.role not in self._roles:
            raise NotFound(f"no role named {run.role!r} is configured", code="role_not_found")
        last = await self._db.runs.turns(run_id, after=max(run.turns - 1, 0), limit=1)
        last_failed = bool(last) and last[0].outcome is TurnOutcome.FAILED
        if run.status is not RunStatus.FAILED or not last_failed:
            raise Conflict(
                "this run has not failed: only a run whose last turn failed can be retried",
                code="not_failed",
            )
        moved = await self._db.runs.set_back(run, last[0].cursor_from)
        if moved is None:
            raise Conflict(
                "the run moved on while it was being retried; look at it again",
                code="run_moved",
            )
        await self._read_again(run_id)
        holder = await self._holder_elsewhere(run_id)
        if holder is not None and self._control is not None:
            await self._control.ask(holder, "retry", run_id, wait=FRESH_WAIT)
        assert moved.thread_id is not None
        self.nudge(moved.thread_id, moved.role)
        return moved

    async def _read_again(self, run_id: RunId) -> bool:
        """The run's cursor was set back: what this host holds of it is read again, now."""
        live = self._by_run.get(run_id)
        if live is None:
            return False
        live.run = None
        self._wake(live)
        return True

    async def _forget_session(self, run_id: RunId) -> bool:
        """The run started fresh: what this host holds of its old session is done for good."""
        live = self._by_run.get(run_id)
        if live is None:
            return False
        live.run, live.generation = None, live.generation + 1
        if not live.busy:
            live.resumable = False
            await self._sessions.close(live)
        return True

    async def _holder_elsewhere(self, run_id: RunId) -> str | None:
        """The replica other than this one holding the run's lease, unexpired; None if none."""
        me = self._owner.replica
        if me is None:
            return None
        lease = await self._db.leases.get(LeaseKind.RUN, run_id)
        now = to_micros(self._clock())
        if lease is None or not lease.held or lease.holder == me or lease.expires_at < now:
            return None
        return lease.holder

    async def _act(self, op: str, run_id: RunId) -> bool:
        """What another replica asked of a run held here (`core.engine.host.remote`)."""
        if op == "cancel":
            return await self._cancel_here(run_id, wait=5.0)
        if op == "retry":
            return await self._read_again(run_id)
        return await self._forget_session(run_id)


def _fence(live: LiveRun) -> Fence | None:
    return live.owned.fence if live.owned is not None else None
