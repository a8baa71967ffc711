"""One turn of a conversation run: prompt the session, collect what it does, commit the end.

An attempt runs in a task of its own (what `cancel` stops) under the role's `turn_timeout`. A
failed attempt — the runtime raised, or time ran out — closes the session (the next attempt
resumes it from its stored state) and is retried after a backoff that doubles, up to
`HostLimits.attempts` in all. Then the driver's end-of-turn rule decides what the people see,
and the end commits in one transaction with the run's cursor and the turn's record.

A session that woke without its agent's memory of the conversation (`needs_opening`: an ACP
agent that cannot load its sessions gets a new one) is told the turn as an opening prompt, as
a session's first turn is. Messages the run sent during the turn with tools of its own — an
agent outside the gateway's process calls them over MCP or HTTP — count as its answer, as those
sent with the host's tools do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from core.engine.host.drafts import Draft, DraftKind, DraftListener
from core.engine.host.live import LiveRun
from core.engine.host.mending import Mending
from core.engine.host.observer import HostObserver
from core.engine.host.sessions import Sessions, needs_opening
from core.engine.runtimes.base import (
    AgentSession,
    Prompt,
    PromptEvent,
    Reply,
    ReplyChunk,
    Step,
    ToolCall,
)
from core.engine.tools import RunTools, ToolBudget
from core.model.errors import Conflict
from core.model.roles.role import Role
from core.model.runs.conversation import (
    TurnPlan,
    cancel_notice,
    end_of_turn,
    failure_notice,
    prompt_for,
    task_summary,
)
from core.model.runs.run import Run, TurnCause, TurnOutcome
from core.model.runs.task import TaskTurnPlan, task_prompt
from core.model.timeline import Message, ThreadId
from core.model.values import clean_text
from core.storage.database import Database
from core.storage.errors import StorageUnavailable
from core.storage.rows import to_micros
from core.storage.runs_reads import TaskTurnInput, TurnInput
from core.storage.runs_store import TurnRecord

log = logging.getLogger("rolecall.host")

Attempted = tuple[AgentSession, list[dict[str, Any]], list[str]]
"""What a successful attempt leaves: the session, the transcript's steps, the replies."""


@dataclass(slots=True)
class Tried:
    """The attempts at one turn, and how they ended."""

    attempts: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    error: str | None = None
    cancelled: bool = False
    session: AgentSession | None = None
    prompt: Prompt | None = None
    """The prompt as the last attempt told it (an opening one, if its session needed it)."""


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


def _unstored(record: TurnRecord, why: str) -> TurnRecord:
    """The record of a turn whose end could not be stored, stored as failed: none of what the
    agent said or did (what storage refused is among it), the attempts' times, and why."""
    return replace(
        record,
        outcome=TurnOutcome.FAILED,
        prompt={},
        steps=[{"kind": "error", "text": why}],
        error=why,
    )


def _describe(error: BaseException) -> str:
    """An error for the transcript and the run's `last_error`: an agent's (or a driver's, which
    may quote the value it refused) mended as agent output is."""
    if isinstance(error, TimeoutError):
        return "the turn took longer than the role's turn_timeout"
    text = str(error) or error.__class__.__name__
    return clean_text(f"{error.__class__.__name__}: {text}"[:2000])


def _state(session: AgentSession | None, stored: Any, steps: list[dict[str, Any]]) -> Any:
    """The session's state to store with the turn's end (None: unchanged, nothing to store),
    mended as agent output is (noted in `steps`)."""
    if session is None:
        return None
    mending = Mending()
    state = mending.value(dict(session.snapshot()), "the session's state")
    if (note := mending.step()) is not None:
        steps.append(note)
    return None if state == stored else state


class TurnTaker:
    def __init__(
        self,
        database: Database,
        sessions: Sessions,
        limits: HostLimits,
        clock: Callable[[], datetime],
        observer: HostObserver,
        activity: Callable[[ThreadId, str, bool], None] = lambda thread, role, working: None,
        drafts: DraftListener = lambda draft: None,
    ) -> None:
        """`activity(thread, role, working)` is told when a conversation turn starts and ends
        (channels show "working…" with it)."""
        self._db = database
        self._activity = activity
        self._drafts = drafts
        self._runs = database.runs
        self._sessions = sessions
        self._limits = limits
        self._clock = clock
        self._observer = observer

    async def take(self, live: LiveRun, role: Role, given: TurnInput, plan: TurnPlan) -> None:
        run = given.run
        assert run.thread_id is not None
        prompt = prompt_for(
            plan,
            role=role.name,
            instructions=role.instructions,
            more=given.page.more,
            opening=not run.session.opened,
            recent=given.recent.events if given.recent else (),
            subscribed=given.subscribed,
        )
        tools = RunTools(self._db, run, read_to=plan.cursor_to)
        started_at = self._clock()
        queued_at = live.queued_at or started_at
        self._observer.turn_started(role.name)
        self._observer.queue_wait(role.name, max((started_at - queued_at).total_seconds(), 0))
        live.cancel_requested = False
        live.turn_ended.clear()
        self._activity(run.thread_id, role.name, True)
        try:
            await self._take(live, role, given, plan, prompt, tools, started_at, queued_at)
        finally:
            live.turn_ended.set()
            self._activity(run.thread_id, role.name, False)

    async def take_task(
        self, live: LiveRun, role: Role, given: TaskTurnInput, plan: TaskTurnPlan
    ) -> None:
        """A task run's turn: the agent's answer is recorded as the run's comments on the task;
        no answer leaves no trace there (the turn is silent)."""
        run = given.run
        generation = live.generation
        prompt = task_prompt(
            plan,
            role=role.name,
            instructions=role.instructions,
            opening=not run.session.opened,
            more=given.more,
        )
        tools = RunTools(self._db, run, read_to=0)
        started_at = self._clock()
        queued_at = live.queued_at or started_at
        self._observer.turn_started(role.name)
        self._observer.queue_wait(role.name, max((started_at - queued_at).total_seconds(), 0))
        live.cancel_requested = False
        live.turn_ended.clear()
        try:
            tried = await self._try(live, role, run, prompt, tools)
            prompt = tried.prompt or prompt
            comments: list[str] = []
            state = None
            if tried.cancelled:
                outcome = TurnOutcome.CANCELLED
            elif tried.error is not None:
                outcome = TurnOutcome.FAILED
            else:
                comments = [text for text in tried.replies if text.strip()]
                outcome = TurnOutcome.REPLIED if comments else TurnOutcome.SILENT
                state = _state(tried.session, run.session.state, tried.steps)
            finished_at = self._clock()
            record = TurnRecord(
                session_id=run.session.id,
                cause=plan.cause,
                outcome=outcome,
                queued_at=to_micros(queued_at),
                started_at=to_micros(started_at),
                finished_at=to_micros(finished_at),
                prompt=prompt.to_json(),
                steps=tried.steps,
                attempts=tried.attempts,
                error=tried.error,
            )

            async def commit(unstored: str | None) -> Run:
                if unstored is not None:  # see `_store_end`
                    return await self._runs.finish_task_turn(
                        run,
                        task_cursor_to=plan.task_cursor_to,
                        comments=(),
                        record=_unstored(record, unstored),
                        session_state=None,
                        failed=True,
                    )
                return await self._runs.finish_task_turn(
                    run,
                    task_cursor_to=plan.task_cursor_to,
                    comments=comments,
                    record=record,
                    session_state=state,
                    failed=tried.error is not None,
                )

            try:
                after, stored = await self._store_end(live, run, commit)
                if not stored:
                    outcome, state = TurnOutcome.FAILED, None
                if state is not None or run.session.opened:
                    live.resumable = True
                live.run = after if live.generation == generation else None
            except Conflict:
                live.run = None
                outcome = TurnOutcome.SUPERSEDED
                await self._sessions.close(live)
            live.last_used = time.monotonic()
            seconds = (finished_at - started_at).total_seconds()
            self._observer.turn_finished(role.name, outcome.value, seconds)
        finally:
            live.turn_ended.set()

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

    async def _try(
        self, live: LiveRun, role: Role, run: Run, prompt: Prompt, tools: RunTools
    ) -> Tried:
        """The attempts at one turn: until one succeeds, control cancels, or all have failed."""
        tried = Tried()
        told: list[Prompt] = []
        for number in range(self._limits.attempts):
            if live.cancel_requested:  # cancelled as one attempt ended, before the next began
                tried.attempts.append(self._attempt_record([], "cancelled by an operator"))
                tried.cancelled = True
                await self._sessions.close(live)
                return tried
            delay = self._limits.backoff * 2 ** (number - 1) if number else 0.0
            began: list[datetime] = []
            try:
                tried.session, tried.steps, tried.replies = await self._attempt(
                    live, role, run, prompt, tools, delay, began, told
                )
            except asyncio.CancelledError:
                tried.prompt = told[-1] if told else None
                task = asyncio.current_task()
                if not live.cancel_requested or (task is not None and task.cancelling()):
                    raise  # the host is stopping: the turn is redone after restart
                tried.attempts.append(self._attempt_record(began, "cancelled by an operator"))
                tried.cancelled = True
                if live.session is not None:
                    with contextlib.suppress(Exception):
                        await live.session.cancel()
                await self._sessions.close(live)
                return tried
            except Exception as failure:  # any runtime failure is this turn's failure
                tried.prompt = told[-1] if told else None
                tried.error = _describe(failure)
                log.warning("run %s: attempt %d failed: %s", run.id, number + 1, tried.error)
                tried.attempts.append(self._attempt_record(began, tried.error))
                self._observer.attempt_failed(role.name)
                await self._sessions.close(live)
                continue
            tried.attempts.append(self._attempt_record(began, None))
            tried.prompt = told[-1] if told else None
            tried.error = None
            return tried
        return tried

    async def _take(
        self,
        live: LiveRun,
        role: Role,
        given: TurnInput,
        plan: TurnPlan,
        prompt: Prompt,
        tools: RunTools,
        started_at: datetime,
        queued_at: datetime,
    ) -> None:
        run = given.run
        generation = live.generation
        tried = await self._try(live, role, run, prompt, tools)
        prompt = tried.prompt or prompt
        steps, replies, error, cancelled, session = (
            tried.steps,
            tried.replies,
            tried.error,
            tried.cancelled,
            tried.session,
        )
        attempts = tried.attempts

        state = None
        messages: Sequence[str] = ()
        if cancelled:
            outcome = TurnOutcome.CANCELLED
            notice = cancel_notice(role.display_name) if plan.cause is TurnCause.MESSAGE else None
        elif error is not None:
            outcome, notice = TurnOutcome.FAILED, failure_notice(role.display_name)
        else:
            sent = tools.sent
            if not sent and not any(text.strip() for text in replies):
                sent = await self._sent_elsewhere(run, after=plan.cursor_to)
            end = end_of_turn(plan.cause, replies, display_name=role.display_name, sent=sent)
            outcome, notice, messages = end.outcome, end.notice, end.messages
            state = _state(session, run.session.state, steps)
        finished_at = self._clock()
        record = TurnRecord(
            session_id=run.session.id,
            cause=plan.cause,
            outcome=outcome,
            queued_at=to_micros(queued_at),
            started_at=to_micros(started_at),
            finished_at=to_micros(finished_at),
            prompt=prompt.to_json(),
            steps=steps,
            attempts=attempts,
            error=error,
        )

        async def commit(unstored: str | None) -> Run:
            if unstored is not None:  # see `_store_end`
                _end, after = await self._runs.finish_turn(
                    run,
                    cursor_to=plan.cursor_to,
                    task_cursor_to=plan.task_cursor_to,
                    messages=(),
                    notice=failure_notice(role.display_name),
                    record=_unstored(record, unstored),
                    session_state=None,
                    failed=True,
                )
                return after
            _end, after = await self._runs.finish_turn(
                run,
                cursor_to=plan.cursor_to,
                task_cursor_to=plan.task_cursor_to,
                messages=messages,
                notice=notice,
                record=record,
                session_state=state,
                failed=error is not None,
            )
            return after

        try:
            after, stored = await self._store_end(live, run, commit)
            if not stored:
                outcome, state = TurnOutcome.FAILED, None
            if state is not None or run.session.opened:
                live.resumable = True
            live.run = after if live.generation == generation else None
        except Conflict:
            live.run = None
            log.warning("run %s moved on while its turn ran; the turn's end was dropped", run.id)
            outcome = TurnOutcome.SUPERSEDED
            await self._sessions.close(live)
        live.last_used = time.monotonic()
        seconds = (finished_at - started_at).total_seconds()
        self._observer.turn_finished(role.name, outcome.value, seconds)

    async def _attempt(
        self,
        live: LiveRun,
        role: Role,
        run: Run,
        prompt: Prompt,
        tools: RunTools,
        delay: float,
        began: list[datetime],
        told: list[Prompt],
    ) -> Attempted:
        """One attempt, in a task of its own (what `cancel` stops, backoff included): wait
        `delay`, wake or start the session, prompt it and collect what it does. The prompt it
        tells is appended to `told`: `prompt`, or — when the session woke without its agent's
        memory of the conversation — `prompt` made an opening one."""

        async def attempt() -> Attempted:
            if delay:
                await asyncio.sleep(delay)
            began.append(self._clock())
            session = await self._sessions.for_turn(live, role, run)
            told.append(prompt)
            if not prompt.opening and needs_opening(session):
                told[-1] = await self._opening(run, prompt)
            said = told[-1]
            if run.thread_id is None:  # a task run: nobody watches its replies being written
                steps, replies = await _collect(session, said, tools, lambda kind, text: None)
                return session, _with_budget(steps, budget), replies
            thread_id = run.thread_id

            def draft(kind: DraftKind, text: str) -> None:
                self._drafts(Draft(thread_id, role.name, kind, text))

            try:
                steps, replies = await _collect(session, said, tools, draft)
            except BaseException:
                draft(DraftKind.ABANDONED, "")
                raise
            return session, _with_budget(steps, budget), replies

        # each attempt may make the role's tool calls afresh, by whatever surface it reaches
        budget = ToolBudget(role.max_tool_calls_per_turn)
        live.tool_budget = tools.budget = budget
        live.attempt = asyncio.create_task(attempt())
        try:
            async with asyncio.timeout(role.turn_timeout + delay):
                return await live.attempt
        finally:
            live.attempt = None
            live.tool_budget = tools.budget = None

    async def _sent_elsewhere(self, run: Run, *, after: int) -> int:
        """Messages the run sent during the turn with tools other than the host's: an agent
        outside the gateway's process sends over MCP or HTTP (they count as its answer too)."""
        assert run.thread_id is not None
        role = run.role_address
        page = await self._db.runs.pending(
            run.thread_id, role, after=after, limit=self._limits.read_limit
        )
        return sum(1 for e in page.events if isinstance(e, Message) and e.author == role)

    async def _opening(self, run: Run, prompt: Prompt) -> Prompt:
        """`prompt` made an opening one, with the tasks the run follows and the conversation
        before the news: read up to the last of the news, the news left out, so that the run's
        own messages among them (sent over MCP in its last turn, they are not news) are there."""
        if run.thread_id is None:  # a task run's prompt carries its task anyway
            return replace(prompt, opening=True)
        told = {event.id for event in prompt.news}
        upto = max((event.seq for event in prompt.news), default=run.cursor)
        unopened = replace(run, cursor=upto, session=replace(run.session, state=None))
        [given] = await self._db.runs.turn_inputs(
            [(unopened, False)], limit=1, recent=self._limits.recent + len(told)
        )
        if isinstance(given, Exception):
            raise given
        read = given.recent.events if given.recent is not None else ()
        recent = [event for event in read if event.id not in told]
        recent = recent[max(len(recent) - self._limits.recent, 0) :]
        seq_of = {event.id: event.seq for event in read}
        return replace(
            prompt,
            opening=True,
            recent=[PromptEvent.of(event, seq_of=seq_of) for event in recent],
            subscribed=[task_summary(task) for task in given.subscribed],
        )

    def _attempt_record(self, began: list[datetime], error: str | None) -> dict[str, Any]:
        finished = self._clock()
        return {
            "started_at": to_micros(began[0] if began else finished),
            "finished_at": to_micros(finished),
            "error": error,
        }


def _with_budget(steps: list[dict[str, Any]], budget: ToolBudget) -> list[dict[str, Any]]:
    """The transcript's steps, with a note of the tool calls refused for the turn's budget."""
    if budget.refused:
        steps.append(
            {
                "kind": "limit",
                "text": f"{budget.refused} tool call(s) refused: the role allows "
                f"{budget.limit} a turn (max_tool_calls_per_turn)",
            }
        )
    return steps


async def _collect(
    session: AgentSession,
    prompt: Prompt,
    tools: RunTools,
    draft: Callable[[DraftKind, str], None],
) -> tuple[list[dict[str, Any]], list[str]]:
    """Everything the agent does in one attempt: the transcript's steps and its replies (the
    pieces of a reply being written go to `draft`, not to the transcript). All of it mended to
    obey `core.model.values`' rule, as it comes (`core.engine.host.mending`); the last step notes
    what was."""
    steps: list[dict[str, Any]] = []
    replies: list[str] = []
    drafting = False
    mending = Mending()
    async for update in session.prompt(prompt, tools):
        if isinstance(update, ReplyChunk):
            if update.text:
                drafting = True
                draft(DraftKind.CHUNK, clean_text(update.text))  # its Reply's note says it
        elif isinstance(update, Reply):
            if drafting:
                draft(DraftKind.END, "")
                drafting = False
            text = mending.text(update.text, f"reply {len(replies) + 1}")
            replies.append(text)
            steps.append({"kind": "reply", "text": text})
        elif isinstance(update, Step):
            where = f"step {len(steps) + 1}"
            steps.append(
                {"kind": mending.text(update.kind, where), "text": mending.text(update.text, where)}
            )
        elif isinstance(update, ToolCall):
            steps.append(
                mending.value(
                    {
                        "kind": "tool_call",
                        "name": update.name,
                        "arguments": dict(update.arguments),
                        "result": update.result,
                        "error": update.error,
                    },
                    f"tool call {update.name!r} (step {len(steps) + 1})",
                )
            )
    if (note := mending.step()) is not None:
        steps.append(note)
    return steps, replies
