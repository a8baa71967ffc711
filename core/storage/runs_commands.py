"""The writes of runs, as commands for the group-commit writer.

Every run write takes its thread's lock (it names the thread), so a turn's replies, the run's
cursor, its session state and the turn's record commit together, in order with the thread's
other writes: a crash either loses the whole end of a turn (it is redone) or none of it — a
reply is never doubled. A turn's end is only taken if the run's cursor is still where the turn
started (`expected_cursor`); otherwise someone else moved the run on and the turn is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, insert, update

from core.model.errors import Conflict, NotAllowed
from core.model.leases import Fence, LeaseKind, LeaseLost
from core.model.participants import Address
from core.model.runs.conversation import FRESH_SESSION_NOTICE
from core.model.runs.run import (
    Run,
    RunId,
    RunKind,
    RunStatus,
    Session,
    SessionId,
    TurnCause,
    TurnOutcome,
)
from core.model.runs.turn_end import (
    Posting,
    Standing,
    cursor_after_turn,
    is_superseded,
    posting,
    standing_after,
    turn_number,
)
from core.model.tasks import Actor, ActorKind, Task, TaskEvent, TaskId
from core.model.timeline import AnyEvent, EventId, Message, SystemNote, ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, RunState
from core.storage.ids import new_id
from core.storage.leases_store import check_fence
from core.storage.rows import from_micros
from core.storage.runs_reads import conversation_run, run, task_run
from core.storage.statements import DriverStatement
from core.storage.tasks_store import comment_as, locked_task

_r, _s, _turns, _t = schema.runs, schema.run_sessions, schema.turns, schema.threads


@dataclass(frozen=True, slots=True)
class _OnThread(NoRuns):
    thread_id: ThreadId

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)


@dataclass(frozen=True, slots=True)
class EnsureConversationRun(_OnThread):
    """The conversation run of `role` in the thread, created (with its first session) if absent."""

    role: str

    def check(self, batch: BatchView) -> None:
        # Membership is permanent and only a member's run is ever created, so a role that is
        # not a member has no run here either.
        if Address(f"role:{self.role}") not in batch.thread(self.thread_id).states:
            raise NotAllowed(
                f"role:{self.role} is not a member of this thread", code="not_a_member"
            )

    def write(self, batch: Batch, plan: None) -> Callable[[], tuple[Run, bool]]:
        found = conversation_run(batch.connection, self.thread_id, self.role)
        if found is not None:
            return lambda: (found, False)
        created = _create_run(batch, RunKind.CONVERSATION, self.role, thread_id=self.thread_id)
        return lambda: (created, True)


def _create_run(
    batch: Batch,
    kind: RunKind,
    role: str,
    *,
    thread_id: ThreadId | None = None,
    task_id: str | None = None,
) -> Run:
    """Insert a run with its first session; the run as it now stands."""
    run_id, session_id = RunId(new_id()), SessionId(new_id())
    batch.connection.execute(
        _INSERT_RUN,
        {
            "id": run_id,
            "kind": kind.value,
            "role": role,
            "thread_id": thread_id,
            "task_id": task_id,
            "cursor": 0,
            "task_cursor": 0,
            "status": RunStatus.READY.value,
            "failures": 0,
            "last_error": None,
            "session_id": session_id,
            "last_turn": 0,
            "created_at": batch.now,
            "updated_at": batch.now,
        },
    )
    batch.connection.execute(
        _INSERT_SESSION,
        {"id": session_id, "run_id": run_id, "number": 1, "opened_at": batch.now, "state": None},
    )
    now = from_micros(batch.now)
    return Run(
        id=run_id,
        kind=kind,
        role=role,
        thread_id=thread_id,
        task_id=task_id,
        cursor=0,
        task_cursor=0,
        status=RunStatus.READY,
        failures=0,
        last_error=None,
        session=Session(id=session_id, number=1, opened_at=now, state=None),
        turns=0,
        created_at=now,
        updated_at=now,
    )


_INSERT_RUN = insert(_r)
_INSERT_SESSION = insert(_s)


@dataclass(frozen=True, slots=True)
class AdvanceCursor:
    """Move the cursors over what needs no turn (the run's own messages, system notes, its own
    task events). A conversation run's move takes its thread's lock; a task run has no thread."""

    thread_id: ThreadId | None
    run_id: RunId
    expected_cursor: int
    to: int
    expected_task_cursor: int
    task_to: int
    fence: Fence | None = None
    """The host's claim on the run, when replicas share the database: refused once lost."""

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,) if self.thread_id is not None else ()

    @property
    def run_ids(self) -> Sequence[str]:
        return (self.run_id,)

    def check(self, batch: BatchView) -> bool:
        """Whether the cursors are still where the move expects them."""
        _fenced(batch, self.run_id, self.fence, thread_locked=self.thread_id is not None)
        state = batch.run(self.run_id)
        expected = (self.expected_cursor, self.expected_task_cursor)
        return not is_superseded((state.cursor, state.task_cursor), expected)

    def write(self, batch: Batch, plan: bool) -> Callable[[], bool]:
        if not plan:
            return lambda: False
        state = batch.run(self.run_id)
        state.cursor, state.task_cursor, state.changed = self.to, self.task_to, True
        return lambda: True


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecord:
    """The transcript of a turn, as the host observed it (times in microseconds)."""

    session_id: str
    cause: TurnCause
    outcome: TurnOutcome
    queued_at: int
    started_at: int
    finished_at: int
    prompt: Mapping[str, Any]
    steps: Sequence[Mapping[str, Any]]
    attempts: Sequence[Mapping[str, Any]]
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnd:
    """What a finished turn commits."""

    replies: Sequence[AnyEvent]
    cursor: int
    turn_number: int
    status: RunStatus
    failures: int
    last_error: str | None


@dataclass(frozen=True, slots=True)
class FinishTurn(_OnThread):
    """Commit the end of a turn: the role's messages (or a system notice), the run's cursor,
    status and session state, and the turn's record — all or nothing."""

    run_id: RunId
    role: str
    expected_cursor: int
    cursor_to: int
    expected_task_cursor: int
    task_cursor_to: int
    messages: Sequence[str]
    notice: str | None
    record: TurnRecord
    session_state: Mapping[str, Any] | None
    failed: bool = False
    fence: Fence | None = None
    in_reply_to: EventId | None = None
    """The person's message the turn's messages answer; None when the turn was woken by other
    news (they are the role's initiative)."""

    @property
    def run_ids(self) -> Sequence[str]:
        return (self.run_id,)

    def check(self, batch: BatchView) -> _TurnPlan:
        _fenced(batch, self.run_id, self.fence, thread_locked=True)
        thread = batch.thread(self.thread_id)
        role = Address(f"role:{self.role}")
        said = [*self.messages, *([self.notice] if self.notice is not None else [])]
        posts = posting(role, thread.states.get(role), says=bool(said), error=self.record.error)
        cursor = cursor_after_turn(
            last_seq=thread.last_seq,
            cursor_to=self.cursor_to,
            posted=len(said) if posts.speaks else 0,
        )
        state = batch.run(self.run_id)
        expected = (self.expected_cursor, self.expected_task_cursor)
        if is_superseded((state.cursor, state.task_cursor), expected):
            raise Conflict(
                "the run moved on while this turn ran; its end was dropped", code="superseded"
            )
        return _TurnPlan(posts, cursor)

    def write(self, batch: Batch, plan: _TurnPlan) -> Callable[[], TurnEnd]:
        thread = batch.thread(self.thread_id)
        role = Address(f"role:{self.role}")
        state = batch.run(self.run_id)
        state.cursor, state.task_cursor = plan.cursor, self.task_cursor_to
        indexes: list[int] = []
        if plan.posting.speaks:
            for text in self.messages:
                indexes.append(
                    batch.stage(
                        thread,
                        Message,
                        author=role,
                        text=text,
                        context=None,
                        in_reply_to=self.in_reply_to,
                    )
                )
            if self.notice is not None:
                indexes.append(batch.stage(thread, SystemNote, text=self.notice))
        return _close_turn(
            batch,
            state,
            self.record,
            failed=self.failed,
            session_state=self.session_state,
            cursors=(self.expected_cursor, self.cursor_to),
            replies=lambda: [batch.committed[i] for i in indexes],
            error=plan.posting.error,
        )


@dataclass(frozen=True, slots=True)
class _TurnPlan:
    posting: Posting
    cursor: int


def _close_turn(
    batch: Batch,
    state: RunState,
    record: TurnRecord,
    *,
    failed: bool,
    session_state: Mapping[str, Any] | None,
    cursors: tuple[int, int],
    replies: Callable[[], Sequence[AnyEvent | TaskEvent]],
    error: str | None,
) -> Callable[[], TurnEnd]:
    """What every end of a turn does to its run: number the turn, set the run's status, store
    the session's state, and record the turn (once what it posted has ids)."""
    state.last_turn = number = turn_number(state.last_turn)
    before = Standing(
        status=RunStatus(state.status), failures=state.failures, last_error=state.last_error
    )
    after = standing_after(before, failed=failed, error=record.error)
    state.status, state.failures = after.status.value, after.failures
    state.last_error = after.last_error
    state.changed = True
    if session_state is not None:
        _SAVE_SESSION.execute(batch.connection, (dict(session_state), record.session_id))
    batch.insert_after_flush(
        _turns,
        _TURN_COLUMNS,
        lambda: (
            new_id(),
            state.id,
            number,
            record.session_id,
            record.cause.value,
            record.outcome.value,
            cursors[0],
            cursors[1],
            record.queued_at,
            record.started_at,
            record.finished_at,
            dict(record.prompt),
            [dict(s) for s in record.steps],
            [posted.id for posted in replies()],
            [dict(a) for a in record.attempts],
            error,
        ),
    )
    status, failures, last_error = RunStatus(state.status), state.failures, state.last_error
    cursor = state.cursor
    return lambda: TurnEnd(
        replies=[e for e in replies() if not isinstance(e, TaskEvent)],
        cursor=cursor,
        turn_number=number,
        status=status,
        failures=failures,
        last_error=last_error,
    )


_SAVE_SESSION = DriverStatement(
    update(_s).where(_s.c.id == bindparam("b_id")).values(state=bindparam("b_state")),
    ["b_state", "b_id"],
)
_TURN_COLUMNS = (
    "id", "run_id", "number", "session_id", "cause", "outcome", "cursor_from", "cursor_to",
    "queued_at", "started_at", "finished_at", "prompt", "steps", "replies", "attempts", "error",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class StartFreshSession(_OnThread):
    """Open the run's next session; archive what was said before it (a system note marks where).
    The new session's first turn is its opening turn."""

    run_id: RunId

    @property
    def run_ids(self) -> Sequence[str]:
        return (self.run_id,)

    def check(self, batch: BatchView) -> None:
        batch.run(self.run_id)  # NotFound for an unknown run
        batch.thread(self.thread_id)

    def write(self, batch: Batch, plan: None) -> Callable[[], tuple[Run, AnyEvent]]:
        current = run(batch.connection, self.run_id)
        thread = batch.thread(self.thread_id)
        session_id = new_id()
        batch.connection.execute(
            insert(_s).values(
                id=session_id,
                run_id=self.run_id,
                number=current.session.number + 1,
                opened_at=batch.now,
            )
        )
        index = batch.stage(thread, SystemNote, text=FRESH_SESSION_NOTICE)
        batch.connection.execute(
            update(_t).where(_t.c.id == self.thread_id).values(archive_before=thread.last_seq)
        )
        batch.connection.execute(
            update(_r)
            .where(_r.c.id == self.run_id)
            .values(session_id=session_id, updated_at=batch.now)
        )
        fresh = run(batch.connection, self.run_id)
        return lambda: (fresh, batch.committed[index])


@dataclass(frozen=True, slots=True)
class MintRunToken(NoRuns):
    """Store the digest of a new token naming `run_id`. A token for an agent session
    (`session_id`) replaces the run's earlier session tokens; an operator's (none) adds one."""

    run_id: RunId
    token_hash: str
    session_id: str | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        batch.run(self.run_id)  # NotFound for an unknown run

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        if self.session_id is not None:
            batch.connection.execute(_REPLACED_TOKENS, {"run_id": self.run_id})
        batch.connection.execute(
            _INSERT_TOKEN,
            {
                "token_hash": self.token_hash,
                "run_id": self.run_id,
                "created_at": batch.now,
                "session_id": self.session_id,
            },
        )
        return lambda: None


@dataclass(frozen=True, slots=True)
class RevokeRunToken(NoRuns):
    """Forget a token (its digest): it names no run from now on. Nothing when it is unknown."""

    token_hash: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.execute(_REVOKE_TOKEN, {"token_hash": self.token_hash})
        return lambda: None


_tok = schema.run_tokens
_INSERT_TOKEN = insert(_tok)
_REPLACED_TOKENS = delete(_tok).where(
    _tok.c.run_id == bindparam("run_id"), _tok.c.session_id.is_not(None)
)
_REVOKE_TOKEN = delete(_tok).where(_tok.c.token_hash == bindparam("token_hash"))


@dataclass(frozen=True, slots=True)
class EnsureTaskRun(NoRuns):
    """The run of `role` on the task, created (with its first session) if absent."""

    task_id: TaskId
    role: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], tuple[Run, bool]]:
        found = task_run(batch.connection, self.task_id, self.role)
        if found is not None:
            return lambda: (found, False)
        created = _create_run(batch, RunKind.TASK, self.role, task_id=self.task_id)
        return lambda: (created, True)


@dataclass(frozen=True, slots=True)
class FinishTaskTurn:
    """Commit the end of a task run's turn: the agent's answer as the run's comments on the
    task, the run's task cursor, status and session state, and the turn's record."""

    run_id: RunId
    task_id: TaskId
    role: str
    expected_task_cursor: int
    task_cursor_to: int
    comments: Sequence[str]
    record: TurnRecord
    session_state: Mapping[str, Any] | None
    failed: bool = False
    thread_ids: Sequence[ThreadId] = ()
    fence: Fence | None = None

    @property
    def run_ids(self) -> Sequence[str]:
        return (self.run_id,)

    def check(self, batch: BatchView) -> Task | None:
        """The task the comments go to, locked (None: no comments)."""
        _fenced(batch, self.run_id, self.fence, thread_locked=False)
        state = batch.run(self.run_id)
        # A task run has no conversation cursor: only its task cursor must be where it was.
        if is_superseded((state.task_cursor,), (self.expected_task_cursor,)):
            raise Conflict(
                "the run moved on while this turn ran; its end was dropped", code="superseded"
            )
        return locked_task(batch.connection, self.task_id) if self.comments else None

    def write(self, batch: Batch, plan: Task | None) -> Callable[[], TurnEnd]:
        state = batch.run(self.run_id)
        actor = Actor(kind=ActorKind.RUN, name=f"role:{self.role}", run_id=self.run_id)
        posted = comment_as(batch, plan, self.comments, actor) if plan is not None else []
        state.task_cursor = self.task_cursor_to
        return _close_turn(
            batch,
            state,
            self.record,
            failed=self.failed,
            session_state=self.session_state,
            cursors=(self.expected_task_cursor, self.task_cursor_to),
            replies=lambda: posted,
            error=self.record.error,
        )


def _fenced(batch: BatchView, run_id: RunId, fence: Fence | None, *, thread_locked: bool) -> None:
    """A write the run host makes as the run's owner commits only while it still is: with
    replicas, a host that lost its lease (it stalled, another took the run over) is refused.
    A conversation run's claim takes its thread's lock, which this batch holds: the lease the
    batch read with the run is the lease (`core.storage.leases_store.Claim`). A task run has no
    thread: its lease row is read under a share lock instead."""
    if fence is None:
        return
    if not thread_locked:
        check_fence(batch, LeaseKind.RUN, run_id, fence)
        return
    state = batch.run(run_id)
    if state.lease_holder != fence.holder or state.lease_fence != fence.number:
        raise LeaseLost(f"run {run_id}")
