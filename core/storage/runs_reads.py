"""Reads of runs, their sessions and turns, as synchronous functions over one connection.

`turn_input` is the conversation driver's one read per turn: the run as it stands and what its
role may see past the cursor (and, for a session's opening turn, the recent conversation), all in
one snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    String,
    and_,
    bindparam,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY

from core.model.errors import NotFound
from core.model.participants import Address
from core.model.runs.run import (
    Attempt,
    Run,
    RunId,
    RunKind,
    RunStatus,
    Session,
    SessionId,
    Turn,
    TurnCause,
    TurnOutcome,
)
from core.model.tasks import Task, TaskEvent
from core.model.timeline import EventId, EventKind, ThreadId
from core.model.visibility import blackouts, is_visible, own_changes
from core.storage import schema, subscriptions_store, tasks_store, threads_reads
from core.storage.pages import TimelinePage
from core.storage.rows import from_micros
from core.storage.statements import DriverStatement
from core.storage.subscriptions_store import TaskNews

_r, _s, _turns = schema.runs, schema.run_sessions, schema.turns
_t, _p, _e = schema.threads, schema.thread_participants, schema.events

_RUN = select(_r, _s.c.number, _s.c.opened_at, _s.c.state).join(_s, _s.c.id == _r.c.session_id)
_RUN_BY_ID = _RUN.where(_r.c.id == bindparam("run_id"))
_RUN_OF_ROLE_IN_THREAD = _RUN.where(
    _r.c.thread_id == bindparam("thread_id"), _r.c.role == bindparam("role")
)


def run_from_row(row: Any) -> Run:
    return Run(
        id=RunId(row.id),
        kind=RunKind(row.kind),
        role=row.role,
        thread_id=ThreadId(row.thread_id) if row.thread_id else None,
        task_id=row.task_id,
        cursor=row.cursor,
        task_cursor=row.task_cursor,
        status=RunStatus(row.status),
        failures=row.failures,
        last_error=row.last_error,
        session=Session(
            id=SessionId(row.session_id),
            number=row.number,
            opened_at=from_micros(row.opened_at),
            state=row.state,
        ),
        turns=row.last_turn,
        created_at=from_micros(row.created_at),
        updated_at=from_micros(row.updated_at),
    )


_RUN_BY_TOKEN = _RUN.join(schema.run_tokens, schema.run_tokens.c.run_id == _r.c.id).where(
    schema.run_tokens.c.token_hash == bindparam("token_hash")
)


def run_by_token(conn: Connection, token_hash: str) -> Run | None:
    row = conn.execute(_RUN_BY_TOKEN, {"token_hash": token_hash}).first()
    return run_from_row(row) if row else None


def run(conn: Connection, run_id: str) -> Run:
    row = conn.execute(_RUN_BY_ID, {"run_id": run_id}).first()
    if row is None:
        raise NotFound(f"no run with id {run_id!r}", code="run_not_found")
    return run_from_row(row)


def conversation_run(conn: Connection, thread_id: ThreadId, role: str) -> Run | None:
    row = conn.execute(_RUN_OF_ROLE_IN_THREAD, {"thread_id": thread_id, "role": role}).first()
    return run_from_row(row) if row else None


_TASK_RUN = _RUN.where(_r.c.task_id == bindparam("task_id"), _r.c.role == bindparam("role"))


def task_run(conn: Connection, task_id: str, role: str) -> Run | None:
    row = conn.execute(_TASK_RUN, {"task_id": task_id, "role": role}).first()
    return run_from_row(row) if row else None


def runs_of_thread(conn: Connection, thread_id: ThreadId) -> list[Run]:
    threads_reads.thread(conn, thread_id)  # NotFound for an unknown thread
    rows = conn.execute(_RUN.where(_r.c.thread_id == thread_id).order_by(_r.c.role)).all()
    return [run_from_row(row) for row in rows]


def runs_of_task(conn: Connection, task_id: str) -> list[Run]:
    if tasks_store.task_row(conn, task_id) is None:
        raise NotFound(f"no task with id {task_id!r}", code="task_not_found")
    rows = conn.execute(_RUN.where(_r.c.task_id == task_id).order_by(_r.c.role)).all()
    return [run_from_row(row) for row in rows]


def runs_of_role(
    conn: Connection, role: str, after: str | None, limit: int, status: RunStatus | None = None
) -> list[Run]:
    query = _RUN.where(_r.c.role == role)
    if status is not None:
        query = query.where(_r.c.status == status.value)
    if after is not None:
        query = query.where(_r.c.id > after)
    return [run_from_row(row) for row in conn.execute(query.order_by(_r.c.id).limit(limit))]


def turn_from_row(row: Any) -> Turn:
    return Turn(
        id=row.id,
        run_id=RunId(row.run_id),
        number=row.number,
        session_id=SessionId(row.session_id),
        cause=TurnCause(row.cause),
        outcome=TurnOutcome(row.outcome),
        cursor_from=row.cursor_from,
        cursor_to=row.cursor_to,
        queued_at=from_micros(row.queued_at),
        started_at=from_micros(row.started_at),
        finished_at=from_micros(row.finished_at),
        prompt=row.prompt,
        steps=row.steps,
        replies=[EventId(i) for i in row.replies],
        attempts=[
            Attempt(
                started_at=from_micros(a["started_at"]),
                finished_at=from_micros(a["finished_at"]),
                error=a.get("error"),
            )
            for a in row.attempts
        ],
        error=row.error,
        trace_id=next((a["trace_id"] for a in row.attempts if a.get("trace_id")), None),
    )


def turns(conn: Connection, run_id: str, after: int, limit: int) -> list[Turn]:
    run(conn, run_id)  # NotFound for an unknown run
    query = (
        select(_turns)
        .where(_turns.c.run_id == run_id, _turns.c.number > after)
        .order_by(_turns.c.number)
        .limit(limit)
    )
    return [turn_from_row(row) for row in conn.execute(query)]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnInput:
    run: Run
    page: TimelinePage
    """What the role may see past the run's cursor; `next` is the last `seq` read (hidden events
    included), where the cursor may go once the turn is done."""
    recent: TimelinePage | None
    """For a session's opening turn: the conversation up to the cursor (newest `recent`)."""
    tasks: TaskNews
    """News of the tasks the run subscribes to, past its task cursor."""
    subscribed: Sequence[Task] = ()
    """For a session's opening turn: the tasks the run subscribes to."""


# A run's news in one statement: the role's own state changes up to the cursor (for its blackout
# windows) and every event past it. Visibility is then decided by `core.model.visibility`. The run
# exists only for a member (membership is permanent), so no membership check is needed.
_own = (
    select(_e, threads_reads.RETRACTED)
    .where(
        _e.c.thread_id == bindparam("thread_id"),
        threads_reads.of_kind(_e.c.kind, EventKind.PARTICIPANT_STATE_CHANGED),
        _e.c.participant == bindparam("viewer"),
        _e.c.seq <= bindparam("after"),
    )
    .subquery("own")
)
_past = (
    select(_e, threads_reads.RETRACTED)
    .where(_e.c.thread_id == bindparam("thread_id"), _e.c.seq > bindparam("after"))
    .order_by(_e.c.seq)
    .limit(bindparam("limit"))
    .subquery("past")
)
_NEWS = DriverStatement(
    union_all(select(_own), select(_past)), ["thread_id", "viewer", "after", "limit"]
)

# The news of many runs in one statement (PostgreSQL): the same two reads for each ask of the
# arrays, each row headed by its ask's number (from 1).
_ask = (
    func.unnest(
        bindparam("thread_ids", type_=ARRAY(String)),
        bindparam("viewers", type_=ARRAY(String)),
        bindparam("afters", type_=ARRAY(BigInteger)),
        bindparam("limits", type_=ARRAY(Integer)),
    )
    .table_valued("thread_id", "viewer", "after", "lim", with_ordinality="n")
    .render_derived(name="ask")
)
_own_of_ask = select(_e, threads_reads.RETRACTED).where(
    _e.c.thread_id == _ask.c.thread_id,
    threads_reads.of_kind(_e.c.kind, EventKind.PARTICIPANT_STATE_CHANGED),
    _e.c.participant == _ask.c.viewer,
    _e.c.seq <= _ask.c.after,
)
_past_of_ask = (
    select(_e, threads_reads.RETRACTED)
    .where(_e.c.thread_id == _ask.c.thread_id, _e.c.seq > _ask.c.after)
    .order_by(_e.c.seq)
    .limit(_ask.c.lim)
    .correlate(_ask)
)
_of_ask = union_all(_own_of_ask, _past_of_ask.subquery().select()).subquery().lateral("found")
_NEWS_OF_MANY = DriverStatement(
    select(_ask.c.n, _of_ask).select_from(_ask).join(_of_ask, true()),
    ["thread_ids", "viewers", "afters", "limits"],
)


def news(
    conn: Connection, thread_id: ThreadId, viewer: Address, after: int, limit: int
) -> TimelinePage:
    """The events past `after` that `viewer` (a member) may see, oldest first, at most `limit`
    read; `next` is the last `seq` read, seen or not."""
    return _page(_NEWS.rows(conn, (thread_id, viewer, after, limit + 1)), viewer, after, limit)


def news_of_runs(conn: Connection, runs: Sequence[Run], limit: int) -> list[TimelinePage] | None:
    """`news` of each conversation run (for its role, past its cursor), in order, in one
    statement for them all — on PostgreSQL, for more than one run; None otherwise, where each
    read on its own costs no more (and fails alone)."""
    if conn.dialect.name != "postgresql" or len(runs) < 2:
        return None
    asks: list[tuple[ThreadId, Address, int]] = []
    for run in runs:
        assert run.thread_id is not None, "only conversation runs read a thread"
        asks.append((run.thread_id, run.role_address, run.cursor))
    rows = _NEWS_OF_MANY.rows(
        conn,
        (
            [t for t, _, _ in asks],
            [viewer for _, viewer, _ in asks],
            [after for _, _, after in asks],
            [limit + 1] * len(asks),
        ),
    )
    each: list[list[Sequence[Any]]] = [[] for _ in asks]
    for row in rows:
        each[row[0] - 1].append(row[1:])
    return [
        _page(found, viewer, after, limit)
        for found, (_, viewer, after) in zip(each, asks, strict=True)
    ]


def _page(rows: Sequence[Sequence[Any]], viewer: Address, after: int, limit: int) -> TimelinePage:
    events = sorted((threads_reads.event_of(row) for row in rows), key=lambda e: e.seq)
    windows = blackouts(own_changes(viewer, events))
    read = [e for e in events if e.seq > after]
    page = read[:limit]
    return TimelinePage(
        events=[e for e in page if is_visible(viewer, e, windows)],
        next=page[-1].seq if page else after,
        more=len(read) > limit,
    )


def turn_input(
    conn: Connection,
    current: Run,
    limit: int,
    recent: int,
    tasks_upto: int | None,
    page: TimelinePage | None = None,
) -> TurnInput:
    """The driver's read for one turn of `current` (as the host last knew it); task news only
    given `tasks_upto`, the task events' committed head (the host knows when there may be
    some). `page`: its `news`, when read already (`news_of_runs`)."""
    assert current.thread_id is not None, "only conversation runs read a thread"
    role = current.role_address
    if page is None:
        page = news(conn, current.thread_id, role, current.cursor, limit)
    opening = None
    subscribed: list[Task] = []
    if not current.session.opened:
        if current.cursor > 0:
            opening = threads_reads.backward(
                conn, current.thread_id, role, current.cursor + 1, recent
            )
        subscribed = subscriptions_store.subscribed_tasks(conn, current.id)
    if tasks_upto is not None:
        tasks = subscriptions_store.task_news(conn, current, limit, tasks_upto)
    else:
        tasks = TaskNews(news=(), read_to=current.task_cursor, more=False)
    return TurnInput(run=current, page=page, recent=opening, tasks=tasks, subscribed=subscribed)


def pending(
    conn: Connection, thread_id: ThreadId, role: Address, after: int, limit: int
) -> TimelinePage:
    return threads_reads.forward(conn, thread_id, role, after, limit)


def conversations_with_news(conn: Connection) -> Sequence[tuple[ThreadId, str]]:
    """(thread, role) of every active role member whose run has not looked at the thread's
    latest event — or that has no run yet although something was said. Read once on start."""
    role_address = literal("role:") + _r.c.role
    query = (
        select(_p.c.thread_id, _p.c.address)
        .join(_t, _t.c.id == _p.c.thread_id)
        .outerjoin(_r, and_(_r.c.thread_id == _p.c.thread_id, role_address == _p.c.address))
        .where(
            _p.c.address.startswith("role:"),
            _p.c.state == "active",
            _t.c.last_seq > 0,
            or_(_r.c.cursor.is_(None), _t.c.last_seq > _r.c.cursor),
        )
    )
    rows = conn.execute(query)
    return [(ThreadId(row.thread_id), row.address.removeprefix("role:")) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTurnInput:
    run: Run
    task: Task
    events: Sequence[TaskEvent]
    """The task's events past the run's task cursor (its own included)."""
    read_to: int
    more: bool


def task_turn_input(conn: Connection, current: Run, limit: int) -> TaskTurnInput:
    assert current.task_id is not None, "only task runs read a task"
    task = tasks_store.task_row(conn, current.task_id)
    if task is None:
        raise NotFound(f"no task with id {current.task_id!r}", code="task_not_found")
    events, more = tasks_store.events_past(conn, current.task_id, current.task_cursor, limit)
    return TaskTurnInput(
        run=current,
        task=task,
        events=events,
        read_to=events[-1].position if events else current.task_cursor,
        more=more,
    )


def tasks_with_news(conn: Connection) -> Sequence[tuple[str, str]]:
    """(task, assignee) of every assigned task whose run has not looked at all its events — or
    that has no run yet. Read once on start."""
    _tk, _ev = schema.tasks, schema.task_events
    run_on_task = and_(_r.c.task_id == _tk.c.id, _r.c.role == _tk.c.assignee)
    unseen = (
        select(_ev.c.position)
        .where(
            _ev.c.task_id == _tk.c.id,
            _ev.c.position > func.coalesce(_r.c.task_cursor, 0),
            or_(_ev.c.run_id.is_(None), _r.c.id.is_(None), _ev.c.run_id != _r.c.id),
        )
        .exists()
    )
    query = (
        select(_tk.c.id, _tk.c.assignee)
        .outerjoin(_r, run_on_task)
        .where(_tk.c.assignee.is_not(None), unseen)
    )
    return [(row.id, row.assignee) for row in conn.execute(query)]
