"""The one interface through which threads and their timelines are written and read.

Every backend (SQLite, PostgreSQL) implements it and passes the same contract suite
(`tests/contract/`). Reads are cursor-based: "after X, up to a limit", returning the next cursor.
Positions are only handed out once everything before them is committed, so a reader that resumes
from a position never misses an event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.membership import ParticipantState
from core.memory_policy import MemoryPolicy
from core.participants import Address, ParticipantSet
from core.threads import Thread
from core.timeline import (
    AnyEvent,
    EventId,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    ThreadId,
)

DEFAULT_PAGE = 50
MAX_PAGE = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelinePage:
    """Events of one thread in `seq` order.

    Reading forward (`after`), `next` is the `after` for the following page — the `seq` of the
    last event returned, or `after` itself when none was — and `more` says whether any visible
    event lies beyond it. Reading backward (`before`), `next`
    is the `before` for the earlier page (the smallest `seq` returned), or None at the beginning.
    """

    events: Sequence[AnyEvent]
    next: int | None
    more: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadPage:
    """Threads in creation order; `next` is the `after` for the following page (None: no more)."""

    threads: Sequence[Thread]
    next: ThreadId | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EventPage:
    """Events of all threads in `position` order; `next` is the position to resume after."""

    events: Sequence[AnyEvent]
    next: int


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
    ) -> Message:
        """Append a message by an active member (`NotAllowed` otherwise), written in `channel`."""

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
