"""One turn of a run: prompt its session, collect what it does, commit the end.

Every turn — of a run in a conversation or on a task — goes the same way; what differs is
supplied by the turn's kind of run (`RunTurn`: `conversation_turn.py`, `task_turn.py`): what its
driver tells the turn and reads from it, and what becomes of its end.

An attempt runs in a task of its own (what `cancel` stops) under the role's `turn_timeout`. A
failed attempt — the runtime raised, or time ran out — closes the session (the next attempt
resumes it from its stored state) and is retried after a backoff that doubles, up to
`HostLimits.attempts` in all. Every attempt's steps are kept, whatever became of it: a failed
or cancelled attempt's are followed by a note of how it ended (`AttemptEnded`), and the one
that succeeded comes last. Then the kind of run decides what its end leaves (the driver's
end-of-turn rules), and the end commits in one transaction with the run's cursors and the turn's
record (`Transcript.record`, the stored JSON, made only here).

A session that woke without its agent's memory of the conversation (`needs_opening`: an ACP
agent that cannot load its sessions gets a new one) is told the turn as an opening prompt, as
a session's first turn is.

Traced (`core.tracing`), a turn is a `rolecall.turn` span — continuing the trace of the nudges
it answers — and each attempt a `rolecall.attempt` span within it; the turn's record keeps the
trace id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Protocol, TypeVar

from core import tracing
from core.engine.approvals import never
from core.engine.host.attempt import Attempted, Collected, collect
from core.engine.host.drafts import DraftKind
from core.engine.host.live import LiveRun, hold_turn
from core.engine.host.mending import Mending
from core.engine.host.observer import HostObserver
from core.engine.host.sessions import Sessions, needs_opening
from core.engine.host.transcript import (
    Attempt,
    AttemptEnded,
    Mended,
    Transcript,
    TranscriptStep,
)
from core.engine.runtimes.base import AgentSession, Prompt
from core.engine.tools import RunTools
from core.engine.tools.budget import LocalBudgets, ToolBudgets
from core.model.errors import Conflict
from core.model.leases import LeaseLost
from core.model.roles.role import Role
from core.model.runs.run import Run, TurnCause, TurnOutcome
from core.model.values import clean_text
from core.storage.errors import StorageUnavailable
from core.storage.runs_store import TurnRecord

log = logging.getLogger("rolecall.host")
CANCELLED = "cancelled by an operator"
"""The error of an attempt an operator cancelled."""
LOCAL = LocalBudgets()
"""The budgets of agents that call their tools in this process."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostLimits:
    slots: int = 64
    """Turns running at once across all roles."""
    attempts: int = 3
    """Tries at a turn before the run is marked failed."""
    backoff: float = 0.5
    """Seconds before the second attempt; doubles for each one after."""
    read_limit: int = 200
    """Events one turn reads past the cursor; the rest come with the next turn."""
    recent: int = 20
    """Events a session's opening prompt carries."""


class TurnEndNotStored(Exception):
    """A turn's end did not commit; the run's driver takes the turn again after a backoff."""


class TurnEnding(Protocol):
    """What a kind of run made of a turn's end (what it posts, its own value)."""

    @property
    def outcome(self) -> TurnOutcome: ...


End = TypeVar("End", bound=TurnEnding)


class RunTurn(Protocol[End]):
    """One turn of a run, as its kind of run supplies it: made by the run's driver after it
    read, for one turn."""

    @property
    def run(self) -> Run:
        """The run as the driver read it (its cursors are what the end's commit checks)."""
        ...

    @property
    def cause(self) -> TurnCause: ...

    @property
    def prompt(self) -> Prompt:
        """What the driver tells the turn."""
        ...

    @property
    def tools(self) -> RunTools:
        """The host's tools for the turn (what they sent is part of the answer)."""
        ...

    def working(self, working: bool) -> None:
        """Told as the turn starts (True) and ends (False)."""

    def draft(self, kind: DraftKind, text: str) -> None:
        """A piece of a reply being written, its end, or its abandonment with its attempt."""

    async def opening(self, prompt: Prompt) -> Prompt:
        """`prompt` made an opening one, for a session that woke without its agent's memory."""
        ...

    def cancelled(self) -> End:
        """The end of a turn that control stopped."""
        ...

    def failed(self) -> End:
        """The end of a turn that failed (every attempt, or its end could not be stored)."""
        ...

    async def answered(self, replies: Sequence[str]) -> End:
        """The end of a turn whose attempt succeeded: `replies` is what the agent said."""
        ...

    async def commit(
        self, end: End, record: TurnRecord, session_state: Mapping[str, Any] | None, *, failed: bool
    ) -> Run:
        """Commit `end` with the turn's record and the session's state; the run as it now is."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Tried:
    """The attempts at one turn, and how they ended."""

    attempts: tuple[Attempt, ...]
    steps: tuple[TranscriptStep, ...]
    """Every attempt's steps, in order: each failed or cancelled one's ended by its
    `AttemptEnded`, the one that succeeded (`answer.steps`) last."""
    prompt: Prompt | None
    """The prompt as the last attempt told it (an opening one, if its session needed it)."""
    answer: Attempted | None = None
    """What the attempt that succeeded left (None: none did)."""
    error: str | None = None
    """The last failed attempt's error, unless one succeeded after it."""
    cancelled: bool = False


def _traced(run: Run, cause: TurnCause, waiting: float) -> dict[str, str | float]:
    """The attributes of a turn's span: its run, where it runs, why, how long it waited."""
    where: dict[str, str] = {}
    if run.thread_id is not None:
        where["rolecall.thread_id"] = run.thread_id
    if run.task_id is not None:
        where["rolecall.task_id"] = run.task_id
    return {
        "rolecall.run_id": run.id,
        "rolecall.role": run.role,
        **where,
        "rolecall.turn.cause": cause.value,
        "rolecall.queue_wait_ms": round(waiting * 1000, 3),
    }


def _describe(error: BaseException) -> str:
    """An error for the transcript and the run's `last_error`: an agent's (or a driver's, which
    may quote the value it refused) mended as agent output is."""
    if isinstance(error, TimeoutError):
        return "the turn took longer than the role's turn_timeout"
    text = str(error) or error.__class__.__name__
    return clean_text(f"{error.__class__.__name__}: {text}"[:2000])


def _state(session: AgentSession, stored: Any) -> tuple[Any, Mended | None]:
    """The session's state to store with the turn's end (None: unchanged, nothing to store),
    mended as agent output is, and the note of what was."""
    mending = Mending()
    state = mending.value(dict(session.snapshot()), "the session's state")
    return (None if state == stored else state), mending.step()


class TurnTaker:
    def __init__(
        self,
        sessions: Sessions,
        limits: HostLimits,
        clock: Callable[[], datetime],
        observer: HostObserver,
        budgets: ToolBudgets | None = None,
        *,
        stopping: Callable[[], bool] = never,
    ) -> None:
        self._stopping = stopping
        self._sessions = sessions
        self._limits = limits
        self._clock = clock
        self._observer = observer
        self._budgets = budgets or LocalBudgets()

    async def take(
        self,
        live: LiveRun,
        role: Role,
        turn: RunTurn[End],
        *,
        waited: tracing.Waiting | None = None,
    ) -> None:
        """Take one turn; `waited`: the traced nudges it answers (`core.tracing.turn`)."""
        started_at = self._clock()
        queued_at = live.queued_at or started_at
        waiting = max((started_at - queued_at).total_seconds(), 0)
        self._observer.turn_started(role.name)
        self._observer.queue_wait(role.name, waiting)
        live.cancel_requested = False
        live.turn_ended.clear()
        turn.working(True)
        try:
            traced = _traced(turn.run, turn.cause, waiting) if tracing.on() else {}
            with tracing.turn(waited, **traced) as span:
                outcome = await self._take(live, role, turn, started_at, queued_at)
                span.set_attribute("rolecall.turn.outcome", outcome.value)
        finally:
            live.turn_ended.set()
            turn.working(False)

    async def _take(
        self,
        live: LiveRun,
        role: Role,
        turn: RunTurn[End],
        started_at: datetime,
        queued_at: datetime,
    ) -> TurnOutcome:
        run = turn.run
        generation = live.generation
        tried = await self._try(live, role, turn)
        state = None
        steps = tried.steps
        if tried.cancelled:
            end = turn.cancelled()
        elif tried.answer is None:
            end = turn.failed()
        else:
            end = await turn.answered(tried.answer.replies)
            state, note = _state(tried.answer.session, run.session.state)
            steps = (*steps, *([note] if note is not None else []))
        outcome = end.outcome
        finished_at = self._clock()
        transcript = Transcript(
            session_id=run.session.id,
            cause=turn.cause,
            outcome=outcome,
            queued_at=queued_at,
            started_at=started_at,
            finished_at=finished_at,
            prompt=tried.prompt or turn.prompt,
            steps=steps,
            attempts=tried.attempts,
            error=tried.error,
            trace_id=tracing.current_trace_id(),
        )

        async def commit(unstored: str | None) -> Run:
            if unstored is not None:  # see `_store_end`
                record = transcript.unstored(unstored).record()
                return await turn.commit(turn.failed(), record, None, failed=True)
            failed = tried.error is not None
            return await turn.commit(end, transcript.record(), state, failed=failed)

        try:
            after, stored = await self._store_end(live, run, commit)
            if not stored:
                outcome, state = TurnOutcome.FAILED, None
            if state is not None or run.session.opened:
                live.resumable = True
            live.run = after if live.generation == generation else None
        except Conflict as conflict:
            live.run = None
            if isinstance(conflict, LeaseLost):
                live.owned = None
            log.warning("run %s moved on while its turn ran; the turn's end was dropped", run.id)
            outcome = TurnOutcome.SUPERSEDED
            await self._sessions.close(live)
        live.last_used = time.monotonic()
        seconds = (finished_at - started_at).total_seconds()
        self._observer.turn_finished(role.name, outcome.value, seconds)
        return outcome

    async def _store_end(
        self, live: LiveRun, run: Run, commit: Callable[[str | None], Awaitable[Run]]
    ) -> tuple[Run, bool]:
        """Commit the turn's end (`commit(None)`); the run as it now stands, and whether the end
        was stored as the turn ended (False: stored as failed, below).

        When the commit fails — the database refused it or was out of reach — the session is
        let go (its agent's memory of this turn was not stored; it wakes from the state that
        was) and `TurnEndNotStored` is raised: the driver reads and takes the turn again after
        a backoff. After `HostLimits.attempts` such failures in a row the turn is stored as
        failed instead, without anything the agent said (`commit(why)`; the people get the
        failure notice). An outage (`StorageUnavailable`) refused nothing and counts not: the
        turn is taken again, however long it lasts. A run is never left with news past its
        cursor and nobody trying."""
        try:
            after = await commit(None)
        except Conflict:
            raise
        except Exception as failure:
            why = f"the turn's end could not be stored: {_describe(failure)}"
            await self._sessions.close(live)
            if isinstance(failure, StorageUnavailable):  # an outage refuses nothing: try again
                log.warning("run %s: %s; the turn is taken again", run.id, why)
                raise TurnEndNotStored(why) from failure
            live.unstored_ends += 1
            if live.unstored_ends < self._limits.attempts:
                log.warning("run %s: %s; the turn is taken again", run.id, why)
                raise TurnEndNotStored(why) from failure
            log.error(
                "run %s: %s (%d times in a row); the turn is stored as failed",
                run.id,
                why,
                live.unstored_ends,
            )
            after = await commit(why)  # if this fails too, the driver tries again later
            live.unstored_ends = 0
            return after, False
        live.unstored_ends = 0
        return after, True

    async def _try(self, live: LiveRun, role: Role, turn: RunTurn[End]) -> Tried:
        """The attempts at one turn: until one succeeds, control cancels, or all have failed."""
        attempts: list[Attempt] = []
        steps: list[TranscriptStep] = []
        told: list[Prompt] = []
        error: str | None = None

        def tried(*, answer: Attempted | None = None, cancelled: bool = False) -> Tried:
            # a cancel after a failed attempt keeps its error: the turn's end is a failed one
            return Tried(
                attempts=tuple(attempts),
                steps=tuple(steps),
                prompt=told[-1] if told else None,
                answer=answer,
                error=None if answer is not None else error,
                cancelled=cancelled,
            )

        def ended(began: list[datetime], did: Collected, why: str | None) -> None:
            """An attempt that did not succeed: its record, and what it did (`why`: its error;
            None: an operator cancelled it)."""
            attempts.append(self._attempt_record(began, why or CANCELLED))
            steps.extend(did.steps)
            steps.append(AttemptEnded(number=len(attempts), error=why))

        for number in range(self._limits.attempts):
            began: list[datetime] = []
            did = Collected()
            if live.cancel_requested:  # cancelled as one attempt ended, before the next began
                ended(began, did, None)
                await self._sessions.close(live)
                return tried(cancelled=True)
            delay = self._limits.backoff * 2 ** (number - 1) if number else 0.0
            try:
                with tracing.attempt(turn.run.id, number + 1):
                    answer = await self._attempt(live, role, turn, delay, began, told, did)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not live.cancel_requested or (task is not None and task.cancelling()):
                    raise  # the host is stopping: the turn is redone after restart
                ended(began, did, None)
                if live.session is not None:
                    with contextlib.suppress(Exception):
                        await live.session.cancel()
                await self._sessions.close(live)
                return tried(cancelled=True)
            except Exception as failure:  # any runtime failure is this turn's failure
                error = _describe(failure)
                log.warning("run %s: attempt %d failed: %s", turn.run.id, number + 1, error)
                ended(began, did, error)
                self._observer.attempt_failed(role.name)
                await self._sessions.close(live)
                continue
            attempts.append(self._attempt_record(began, None))
            steps.extend(answer.steps)
            return tried(answer=answer)
        return tried()

    async def _attempt(
        self,
        live: LiveRun,
        role: Role,
        turn: RunTurn[End],
        delay: float,
        began: list[datetime],
        told: list[Prompt],
        did: Collected,
    ) -> Attempted:
        """One attempt, in a task of its own (what `cancel` stops, backoff included): wait
        `delay`, wake or start the session, prompt it and collect what it does into `did` —
        closed with the host's notes however the attempt ends. The prompt it tells is appended
        to `told`: the turn's, or — when the session woke without its agent's memory of the
        conversation — the turn's made an opening one."""

        async def attempt() -> Attempted:
            if delay:
                await asyncio.sleep(delay)
            # each attempt may make the role's tool calls afresh, by whatever surface it reaches;
            # an agent that calls them in this process needs no budget other replicas can see
            budgets = self._budgets if self._sessions.calls_tools_from_outside(role) else LOCAL
            budget = await budgets.open(turn.run.id, role.max_tool_calls_per_turn)
            live.tool_budget = turn.tools.budget = budget
            turn.tools.hold = partial(hold_turn, live)
            turn.tools.stopping = self._stopping
            began.append(self._clock())
            session = await self._sessions.for_turn(live, role, turn.run)
            told.append(turn.prompt)
            if not turn.prompt.opening and needs_opening(session):
                told[-1] = await turn.opening(turn.prompt)
            try:
                return await collect(session, told[-1], turn.tools, budget, turn.draft, into=did)
            except BaseException:
                turn.draft(DraftKind.ABANDONED, "")
                raise

        live.attempt = asyncio.create_task(attempt())
        try:
            async with asyncio.timeout(role.turn_timeout + delay) as live.deadline:
                return await live.attempt
        finally:
            live.attempt = live.deadline = None
            budget, live.tool_budget, turn.tools.budget = live.tool_budget, None, None
            try:
                await did.close(budget)  # an attempt that raised: the notes on what it did
            except Exception as error:  # its refusals could not be read: the steps stand
                log.warning("run %s: the attempt's refusals were not read: %s", turn.run.id, error)
            if budget is not None:
                await self._budgets.close(budget)  # (a local budget is nothing to close)

    def _attempt_record(self, began: list[datetime], error: str | None) -> Attempt:
        finished = self._clock()
        return Attempt(
            started_at=began[0] if began else finished, finished_at=finished, error=error
        )
