"""Threads and their timelines: the one interface through which they are written and read
(`ThreadRepository`), and its implementation on SQL (SQLite and PostgreSQL).

Every backend (SQLite, PostgreSQL) implements it and passes the same contract suite
(`tests/contract/`). Reads are cursor-based: "after X, up to a limit", returning the next cursor.
Positions are only handed out once everything before them is committed, so a reader that resumes
from a position never misses an event.

Writes are commands for the group-commit writer (`core.storage.threads_commands`); reads are
synchronous functions over one connection (`core.storage.threads_reads`), run by a transactor: on
SQLite in a small pool of threads on stdlib sqlite3 (one hop per read; the event stream's pages,
brief, on the event loop), on PostgreSQL through asyncpg (see `core.storage.transact`).
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import Connection

from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address, ParticipantSet
from core.model.threads import Thread
from core.model.timeline import (
    EventId,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    ThreadId,
)
from core.storage import positions, threads_reads
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE, EventPage, ThreadPage, TimelinePage
from core.storage.threads_commands import (
    ChangeParticipantState,
    PostMessage,
    ResolveThread,
    Retract,
    SetMemoryPolicy,
)
from core.storage.transact import Transactor
from core.storage.writer import Writer


class ThreadRepository(Protocol):
    async def resolve(self, participants: ParticipantSet) -> tuple[Thread, bool]:
        """The one thread of this set, and whether this call created it. Race-free."""

    async def get(self, thread_id: ThreadId) -> Thread:
        """The thread, or `NotFound` (code `thread_not_found`)."""

    async def list_for(
        self, participant: Address, *, after: ThreadId | None = None, limit: int = DEFAULT_PAGE
    ) -> ThreadPage:
        """The threads `participant` is a member of, oldest first, after the thread `after`."""

    async def post_message(
        self,
        thread_id: ThreadId,
        author: Address,
        text: str,
        context: MessageContext | None = None,
        *,
        channel: str | None = None,
        in_reply_to: EventId | None = None,
    ) -> Message:
        """Append a message by an active member (`NotAllowed` otherwise), written in `channel`;
        a role's may name the person's message it answers (`in_reply_to`)."""

    async def set_participant_state(
        self, thread_id: ThreadId, participant: Address, state: ParticipantState
    ) -> StateChange:
        """Move a member between active and removed (`Conflict` for a never-member or no-op)."""

    async def retract(
        self, thread_id: ThreadId, message_id: EventId, author: Address, reason: str | None
    ) -> Retraction:
        """Mark the author's own message retracted, once."""

    async def set_memory_policy(self, thread_id: ThreadId, policy: MemoryPolicy) -> Thread:
        """Change the thread's memory policy (affects only entries stored later)."""

    async def timeline(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        after: int = 0,
        limit: int = DEFAULT_PAGE,
        include_archived: bool = True,
    ) -> TimelinePage:
        """The oldest `limit` events with `seq > after` that `viewer` may see (None: operator).
        `include_archived=False` leaves out what was said before the latest "start fresh".

        A viewer who is not a member gets `NotAllowed` (code `not_a_member`).
        """

    async def latest(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        before: int | None = None,
        limit: int = DEFAULT_PAGE,
        include_archived: bool = True,
    ) -> TimelinePage:
        """The newest `limit` visible events with `seq < before` (None: from the end), in `seq`
        order — for paging back through history."""

    async def events_since(self, position: int, *, limit: int = MAX_PAGE) -> EventPage:
        """Committed events of every thread with `position > position`, in position order."""

    async def head(self) -> int:
        """The highest committed position (0 when the store is empty)."""


class SqlThreadRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
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
        *,
        channel: str | None = None,
        in_reply_to: EventId | None = None,
    ) -> Message:
        event = await self._writer.run(
            PostMessage(thread_id, author, text, context, channel, in_reply_to)
        )
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

    # --- reads: each one function over one connection, one snapshot ---------------------

    async def get(self, thread_id: ThreadId) -> Thread:
        return await self._reads.transact(lambda c: threads_reads.thread(c, thread_id))

    async def list_for(
        self, participant: Address, *, after: ThreadId | None = None, limit: int = DEFAULT_PAGE
    ) -> ThreadPage:
        return await self._reads.transact(
            lambda c: threads_reads.threads_of(c, participant, after, limit)
        )

    async def timeline(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        after: int = 0,
        limit: int = DEFAULT_PAGE,
        include_archived: bool = True,
    ) -> TimelinePage:
        def read(c: Connection) -> TimelinePage:
            floor = 1 if include_archived else threads_reads.archive_floor(c, thread_id)
            return threads_reads.forward(c, thread_id, viewer, after, limit, floor=floor)

        return await self._reads.transact(read)

    async def latest(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        before: int | None = None,
        limit: int = DEFAULT_PAGE,
        include_archived: bool = True,
    ) -> TimelinePage:
        def read(c: Connection) -> TimelinePage:
            floor = 1 if include_archived else threads_reads.archive_floor(c, thread_id)
            return threads_reads.backward(c, thread_id, viewer, before, limit, floor=floor)

        return await self._reads.transact(read)

    async def events_since(self, position: int, *, limit: int = MAX_PAGE) -> EventPage:
        return await positions.read_committed(
            self._reads,
            lambda c, heads: threads_reads.since(c, position, limit, heads.events),
            single=True,
        )

    async def head(self) -> int:
        """The timeline's committed head: every position up to it is readable."""
        return (await positions.committed(self._reads)).events
