"""The thread repository on SQL (SQLite and PostgreSQL): writes through the writer, reads direct.

Filtered timeline reads never replay the timeline. The viewer's own state changes give its
blackout windows (`core.visibility.blackouts`); their complement is a handful of `seq` ranges,
each read with the `(thread_id, seq)` index, newest or oldest first, until the page is full.
Within a thread `at` never decreases along `seq`, so windows over `(at, seq)` are windows over
`seq`. Reads run in one snapshot (SQLite's read transaction; REPEATABLE READ on PostgreSQL), so
a state change committed mid-read cannot make a page show what its windows should hide.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.errors import NotAllowed, NotFound
from core.membership import ParticipantState
from core.memory_policy import MemoryPolicy
from core.participants import Address, ParticipantSet
from core.storage import schema
from core.storage.commands import (
    ChangeParticipantState,
    PostMessage,
    ResolveThread,
    Retract,
    SetMemoryPolicy,
)
from core.storage.repository import DEFAULT_PAGE, MAX_PAGE, EventPage, TimelinePage
from core.storage.rows import event_from_row, from_micros
from core.storage.writer import Writer
from core.threads import Thread
from core.timeline import (
    AnyEvent,
    EventId,
    EventKind,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    ThreadId,
)
from core.visibility import blackouts

SeqRange = tuple[int, int | None]
"""Inclusive `seq` bounds; None: no upper bound."""

ALL: list[SeqRange] = [(1, None)]


class SqlThreadRepository:
    def __init__(self, reader: AsyncEngine, writer: Writer) -> None:
        self._reader = reader
        self._writer = writer

    # --- writes -----------------------------------------------------------------------------

    async def resolve(self, participants: ParticipantSet) -> tuple[Thread, bool]:
        return await self._writer.run(ResolveThread(participants))

    async def post_message(
        self,
        thread_id: ThreadId,
        author: Address,
        text: str,
        context: MessageContext | None = None,
    ) -> Message:
        event = await self._writer.run(PostMessage(thread_id, author, text, context))
        assert isinstance(event, Message)
        return event

    async def set_participant_state(
        self, thread_id: ThreadId, participant: Address, state: ParticipantState
    ) -> StateChange:
        event = await self._writer.run(ChangeParticipantState(thread_id, participant, state))
        assert isinstance(event, StateChange)
        return event

    async def retract(
        self, thread_id: ThreadId, message_id: EventId, author: Address, reason: str | None
    ) -> Retraction:
        event = await self._writer.run(Retract(thread_id, message_id, author, reason))
        assert isinstance(event, Retraction)
        return event

    async def set_memory_policy(self, thread_id: ThreadId, policy: MemoryPolicy) -> Thread:
        return await self._writer.run(SetMemoryPolicy(thread_id, policy))

    # --- reads ------------------------------------------------------------------------------

    async def get(self, thread_id: ThreadId) -> Thread:
        async with self._reader.connect() as conn:
            return await _thread(conn, thread_id)

    async def list_for(self, participant: Address, *, limit: int = MAX_PAGE) -> Sequence[Thread]:
        p, t = schema.thread_participants, schema.threads
        async with self._reader.connect() as conn:
            ids = (
                (
                    await conn.execute(
                        select(t.c.id)
                        .join(p, p.c.thread_id == t.c.id)
                        .where(p.c.address == participant)
                        .order_by(t.c.created_at, t.c.id)
                        .limit(limit)
                    )
                )
                .scalars()
                .all()
            )
            return [await _thread(conn, ThreadId(i)) for i in ids]

    async def timeline(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        after: int = 0,
        limit: int = DEFAULT_PAGE,
    ) -> TimelinePage:
        async with self._reader.connect() as conn:
            ranges = await _visible_ranges(conn, thread_id, viewer)
            rows: list[Any] = []
            for low, high in ranges:
                if high is not None and high <= after:
                    continue
                query = _in_thread(thread_id, max(low, after + 1), high).order_by(
                    schema.events.c.seq
                )
                rows += (await conn.execute(query.limit(limit + 1 - len(rows)))).mappings().all()
                if len(rows) > limit:
                    break
            page = rows[:limit]
            events = await _with_retractions(conn, page)
        return TimelinePage(
            events=events, next=page[-1]["seq"] if page else after, more=len(rows) > limit
        )

    async def latest(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        before: int | None = None,
        limit: int = DEFAULT_PAGE,
    ) -> TimelinePage:
        async with self._reader.connect() as conn:
            ranges = await _visible_ranges(conn, thread_id, viewer)
            rows: list[Any] = []
            for low, high in reversed(ranges):
                if before is not None:
                    if low >= before:
                        continue
                    high = before - 1 if high is None else min(high, before - 1)
                query = _in_thread(thread_id, low, high).order_by(schema.events.c.seq.desc())
                rows += (await conn.execute(query.limit(limit + 1 - len(rows)))).mappings().all()
                if len(rows) > limit:
                    break
            page = rows[:limit][::-1]
            events = await _with_retractions(conn, page)
        more = len(rows) > limit
        return TimelinePage(events=events, next=page[0]["seq"] if more else None, more=more)

    async def events_since(self, position: int, *, limit: int = MAX_PAGE) -> EventPage:
        e = schema.events
        async with self._reader.connect() as conn:
            rows = (
                (
                    await conn.execute(
                        select(e).where(e.c.position > position).order_by(e.c.position).limit(limit)
                    )
                )
                .mappings()
                .all()
            )
            events = await _with_retractions(conn, rows)
        return EventPage(events=events, next=rows[-1]["position"] if rows else position)

    async def head(self) -> int:
        c = schema.stream_positions
        async with self._reader.connect() as conn:
            value = await conn.scalar(select(c.c.value).where(c.c.stream == schema.EVENTS_STREAM))
        return int(value or 0)


# --- helpers over one read connection ---------------------------------------------------------


async def _thread(conn: AsyncConnection, thread_id: ThreadId) -> Thread:
    t, p = schema.threads, schema.thread_participants
    row = (await conn.execute(select(t).where(t.c.id == thread_id))).first()
    if row is None:
        raise NotFound(f"no thread with id {thread_id!r}", code="thread_not_found")
    members = await conn.execute(
        select(p.c.address, p.c.state).where(p.c.thread_id == thread_id).order_by(p.c.address)
    )
    return Thread(
        id=ThreadId(row.id),
        participants=tuple((Address(m.address), ParticipantState(m.state)) for m in members),
        memory_policy=MemoryPolicy(thread_only=row.memory_thread_only),
        created_at=from_micros(row.created_at),
    )


async def _visible_ranges(
    conn: AsyncConnection, thread_id: ThreadId, viewer: Address | None
) -> list[SeqRange]:
    """The `seq` ranges `viewer` may see (all of them for the operator's view)."""
    thread = await _thread(conn, thread_id)
    if viewer is None:
        return ALL
    if viewer not in thread.states:
        raise NotAllowed(f"{viewer} is not a member of this thread", code="not_a_member")
    e = schema.events
    rows = (
        await conn.execute(
            select(e)
            .where(
                e.c.thread_id == thread_id,
                e.c.participant == viewer,
                e.c.kind == EventKind.PARTICIPANT_STATE_CHANGED.value,
            )
            .order_by(e.c.seq)
        )
    ).mappings()
    changes = [c for c in (event_from_row(r) for r in rows) if isinstance(c, StateChange)]
    ranges: list[SeqRange] = []
    low = 1
    for window in blackouts(changes):
        ranges.append((low, window.start[1]))
        if window.end is None:
            return ranges
        low = window.end[1]
    ranges.append((low, None))
    return ranges


def _in_thread(thread_id: ThreadId, low: int, high: int | None) -> Select[Any]:
    e = schema.events
    query = select(e).where(e.c.thread_id == thread_id, e.c.seq >= low)
    return query if high is None else query.where(e.c.seq <= high)


async def _with_retractions(conn: AsyncConnection, rows: Iterable[Any]) -> list[AnyEvent]:
    rows = list(rows)
    messages = [r["id"] for r in rows if r["kind"] == EventKind.MESSAGE.value]
    retracted: set[str] = set()
    if messages:
        e = schema.events
        retracted = set(
            (
                await conn.execute(
                    select(e.c.target).where(
                        e.c.kind == EventKind.RETRACTION.value, e.c.target.in_(messages)
                    )
                )
            ).scalars()
        )
    return [event_from_row(r, retracted=r["id"] in retracted) for r in rows]
