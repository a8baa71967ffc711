"""The thread repository on SQL (SQLite and PostgreSQL).

Writes are commands for the group-commit writer (`core.storage.commands`); reads are synchronous
functions over one connection (`core.storage.reads`), run by a transactor: on SQLite in a small
pool of threads on stdlib sqlite3 (one hop per read; the event stream's pages, brief, on the event
loop), on PostgreSQL through asyncpg (see `core.storage.transact`).
"""

from __future__ import annotations

from sqlalchemy import Connection

from core.membership import ParticipantState
from core.memory_policy import MemoryPolicy
from core.participants import Address, ParticipantSet
from core.storage import reads
from core.storage.commands import (
    ChangeParticipantState,
    PostMessage,
    ResolveThread,
    Retract,
    SetMemoryPolicy,
)
from core.storage.repository import (
    DEFAULT_PAGE,
    MAX_PAGE,
    EventPage,
    ThreadPage,
    TimelinePage,
)
from core.storage.transact import Transactor
from core.storage.writer import Writer
from core.threads import Thread
from core.timeline import EventId, Message, MessageContext, Retraction, StateChange, ThreadId


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
    ) -> Message:
        event = await self._writer.run(PostMessage(thread_id, author, text, context, channel))
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
        return await self._reads.transact(lambda c: reads.thread(c, thread_id))

    async def list_for(
        self, participant: Address, *, after: ThreadId | None = None, limit: int = DEFAULT_PAGE
    ) -> ThreadPage:
        return await self._reads.transact(lambda c: reads.threads_of(c, participant, after, limit))

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
            floor = 1 if include_archived else reads.archive_floor(c, thread_id)
            return reads.forward(c, thread_id, viewer, after, limit, floor=floor)

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
            floor = 1 if include_archived else reads.archive_floor(c, thread_id)
            return reads.backward(c, thread_id, viewer, before, limit, floor=floor)

        return await self._reads.transact(read)

    async def events_since(self, position: int, *, limit: int = MAX_PAGE) -> EventPage:
        return await self._reads.transact_brief(lambda c: reads.since(c, position, limit))

    async def head(self) -> int:
        return await self._reads.transact(reads.head)
