"""The repository's reads, as synchronous functions over one connection (one snapshot).

Filtered timeline reads never replay the timeline. The viewer's own state changes give its
blackout windows (`core.model.visibility.blackouts`); their complement is a handful of `seq` ranges,
each read with the `(thread_id, seq)` index, newest or oldest first, until the page is full.
Within a thread `at` never decreases along `seq`, so windows over `(at, seq)` are windows over
`seq`. Each read runs in one transaction — a snapshot (SQLite's read transaction; REPEATABLE READ
on PostgreSQL) — so a state change committed mid-read cannot make a page show what its windows
should hide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    bindparam,
    exists,
    literal_column,
    select,
)

from core.model.errors import NotAllowed, NotFound
from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address
from core.model.threads import Thread
from core.model.timeline import AnyEvent, EventKind, StateChange, ThreadId
from core.model.visibility import blackouts
from core.storage import schema
from core.storage.batch import Reads
from core.storage.pages import EventPage, ThreadPage, TimelinePage
from core.storage.rows import event_from_row, from_micros
from core.storage.statements import DriverStatement

SeqRange = tuple[int, int | None]
"""Inclusive `seq` bounds; None: no upper bound."""

ALL: list[SeqRange] = [(1, None)]

_t, _p, _e = schema.threads, schema.thread_participants, schema.events


def of_kind(column: ColumnElement[Any], kind: EventKind) -> ColumnElement[bool]:
    """`column = '<kind>'`, the kind written into the statement rather than bound. The partial
    indexes on events (`WHERE kind = 'participant_state_changed'`, `WHERE kind = 'retraction'`)
    serve a statement only when its plan can tell the condition holds; with `kind = ?` SQLite
    prepares the statement again at every execution to decide (several times the cost of the
    read itself)."""
    return column == literal_column(f"'{kind.value}'")


_THREAD = select(_t.c.id, _t.c.created_at, _t.c.memory_thread_only, _p.c.address, _p.c.state).join(
    _p, _p.c.thread_id == _t.c.id
)
_THREAD_EXISTS = select(_t.c.id).where(_t.c.id == bindparam("thread_id"))
# The viewer's membership and its own state changes, in one read: one row per change, or a
# single row with no event when it has none; no row at all when it is not a member.
_MEMBER_AND_OWN_CHANGES = (
    select(_p.c.state, _e)
    .select_from(
        _p.outerjoin(
            _e,
            and_(
                _e.c.thread_id == _p.c.thread_id,
                _e.c.participant == _p.c.address,
                of_kind(_e.c.kind, EventKind.PARTICIPANT_STATE_CHANGED),
            ),
        )
    )
    .where(_p.c.thread_id == bindparam("thread_id"), _p.c.address == bindparam("viewer"))
    .order_by(_e.c.seq)
)
# Every event read carries whether a retraction targets it (the partial unique index answers).
_retractions = _e.alias("retractions")
RETRACTED = (
    exists()
    .where(of_kind(_retractions.c.kind, EventKind.RETRACTION), _retractions.c.target == _e.c.id)
    .label("retracted")
)
_RANGE = select(_e, RETRACTED).where(
    _e.c.thread_id == bindparam("thread_id"),
    _e.c.seq >= bindparam("low"),
    _e.c.seq <= bindparam("high"),
)
_OLDEST_FIRST = _RANGE.order_by(_e.c.seq).limit(bindparam("limit"))
_NEWEST_FIRST = _RANGE.order_by(_e.c.seq.desc()).limit(bindparam("limit"))
NO_END = 2**62
_SINCE = DriverStatement(
    select(_e, RETRACTED)
    .where(_e.c.position > bindparam("position"), _e.c.position <= bindparam("upto"))
    .order_by(_e.c.position)
    .limit(bindparam("limit")),
    ["position", "upto", "limit"],
)
_ARCHIVE_BEFORE = select(_t.c.archive_before).where(_t.c.id == bindparam("thread_id"))


def threads_by_id(conn: Connection, ids: Sequence[ThreadId]) -> list[Thread]:
    """The threads with these ids, in the order given (unknown ids are left out)."""
    found: dict[str, Thread] = {}
    rows = conn.execute(
        _THREAD.where(_t.c.id.in_(bindparam("ids", expanding=True))).order_by(
            _t.c.id, _p.c.address
        ),
        {"ids": list(ids)},
    ).all()
    members: dict[str, list[tuple[Address, ParticipantState]]] = {}
    for row in rows:
        members.setdefault(row.id, []).append((Address(row.address), ParticipantState(row.state)))
        if row.id not in found:
            found[row.id] = Thread(
                id=ThreadId(row.id),
                participants=(),
                memory_policy=MemoryPolicy(thread_only=row.memory_thread_only),
                created_at=from_micros(row.created_at),
            )
    return [
        Thread(
            id=found[i].id,
            participants=tuple(members[i]),
            memory_policy=found[i].memory_policy,
            created_at=found[i].created_at,
        )
        for i in ids
        if i in found
    ]


def thread(conn: Connection, thread_id: ThreadId) -> Thread:
    found = threads_by_id(conn, [thread_id])
    if not found:
        raise NotFound(f"no thread with id {thread_id!r}", code="thread_not_found")
    return found[0]


def threads_of(
    conn: Connection, participant: Address, after: ThreadId | None, limit: int
) -> ThreadPage:
    """Thread ids are UUIDv7, so id order is creation order: page by id."""
    query = select(_p.c.thread_id).where(_p.c.address == participant)
    if after is not None:
        query = query.where(_p.c.thread_id > after)
    rows = conn.execute(query.order_by(_p.c.thread_id).limit(limit + 1)).scalars()
    ids = [ThreadId(i) for i in rows]
    page = ids[:limit]
    return ThreadPage(
        threads=threads_by_id(conn, page), next=page[-1] if len(ids) > limit else None
    )


def covers(ranges: Sequence[SeqRange], seq: int) -> bool:
    """Whether the event at `seq` lies in one of the ranges."""
    return any(low <= seq and (high is None or seq <= high) for low, high in ranges)


def visible_ranges(conn: Reads, thread_id: ThreadId, viewer: Address | None) -> list[SeqRange]:
    """The `seq` ranges `viewer` may see (all of them for the operator's view)."""
    if viewer is None:
        if conn.execute(_THREAD_EXISTS, {"thread_id": thread_id}).first() is None:
            raise NotFound(f"no thread with id {thread_id!r}", code="thread_not_found")
        return ALL
    rows = conn.execute(_MEMBER_AND_OWN_CHANGES, {"thread_id": thread_id, "viewer": viewer}).all()
    if not rows:
        if conn.execute(_THREAD_EXISTS, {"thread_id": thread_id}).first() is None:
            raise NotFound(f"no thread with id {thread_id!r}", code="thread_not_found")
        raise NotAllowed(f"{viewer} is not a member of this thread", code="not_a_member")
    events = (event_from_row(row[1:]) for row in rows if row.id is not None)
    changes = [c for c in events if isinstance(c, StateChange)]
    ranges: list[SeqRange] = []
    low = 1
    for window in blackouts(changes):
        ranges.append((low, window.start[1]))
        if window.end is None:
            return ranges
        low = window.end[1]
    ranges.append((low, None))
    return ranges


def archive_floor(conn: Connection, thread_id: ThreadId) -> int:
    """The lowest `seq` not archived by a "start fresh" (1 when nothing is archived)."""
    found = conn.execute(_ARCHIVE_BEFORE, {"thread_id": thread_id}).scalar()
    return max(int(found or 0), 1)


def forward(
    conn: Connection,
    thread_id: ThreadId,
    viewer: Address | None,
    after: int,
    limit: int,
    *,
    floor: int = 1,
) -> TimelinePage:
    """`floor`: leave out events below this `seq` (archived ones, for person-facing reads)."""
    rows: list[Any] = []
    for low, high in visible_ranges(conn, thread_id, viewer):
        if high is not None and (high <= after or high < floor):
            continue
        start = max(low, after + 1, floor)
        rows += _range(conn, _OLDEST_FIRST, thread_id, start, high, limit - len(rows))
        if len(rows) > limit:
            break
    page = rows[:limit]
    return TimelinePage(
        events=[event_of(row) for row in page],
        next=page[-1].seq if page else after,
        more=len(rows) > limit,
    )


def backward(
    conn: Connection,
    thread_id: ThreadId,
    viewer: Address | None,
    before: int | None,
    limit: int,
    *,
    floor: int = 1,
) -> TimelinePage:
    rows: list[Any] = []
    for low, high in reversed(visible_ranges(conn, thread_id, viewer)):
        if high is not None and high < floor:
            continue
        low = max(low, floor)
        if before is not None:
            if low >= before:
                continue
            high = before - 1 if high is None else min(high, before - 1)
        rows += _range(conn, _NEWEST_FIRST, thread_id, low, high, limit - len(rows))
        if len(rows) > limit:
            break
    page = rows[:limit][::-1]
    more = len(rows) > limit
    return TimelinePage(
        events=[event_of(row) for row in page], next=page[0].seq if more else None, more=more
    )


def since(conn: Connection, position: int, limit: int, upto: int) -> EventPage:
    """Every thread's events after `position` and at most `upto` (the committed head,
    `core.storage.positions`), in position order."""
    events = [event_of(row) for row in _SINCE.rows(conn, (position, upto, limit))]
    return EventPage(events=events, next=events[-1].position if events else position)


def _range(
    conn: Connection,
    query: Select[Any],
    thread_id: ThreadId,
    low: int,
    high: int | None,
    wanted: int,
) -> Sequence[Any]:
    """Up to `wanted + 1` rows with `low <= seq <= high` (one more, to tell whether any remain)."""
    params = {"thread_id": thread_id, "low": low, "high": NO_END if high is None else high}
    return conn.execute(query, {**params, "limit": wanted + 1}).all()


def event_of(row: Sequence[Any]) -> AnyEvent:
    """An event from a row of `select(events, retracted)`."""
    return event_from_row(row[:-1], retracted=row[-1])
