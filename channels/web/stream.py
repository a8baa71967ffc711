"""One reader of committed events, fanned out to every open widget stream.

The database tells its listeners what each commit appended (`Database.listen`, on the event
loop, right after the commit); the run host tells when a conversation's turn starts and ends
(`RunHost.watch_activity`). `Fanout` hands both to the streams open on that conversation — an
in-memory queue each — so a thousand open widgets cost no database query per event. A stream
reads the database only when it starts (what the browser missed: `Last-Event-ID`) and when its
queue overflowed (it fell behind; it catches up from the database and goes on).

What a stream passes on is filtered for its viewer here, in memory, by the visibility rule of
`core.model.visibility`: a participant sees their own state changes, and everything else while
active.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent, StateChange, ThreadId

QUEUE_LIMIT = 1_000
"""Items a stream may fall behind before it is told to catch up from the database."""


@dataclass(frozen=True, slots=True)
class Working:
    role: str
    working: bool


class Overflowed:
    """The stream fell more than `QUEUE_LIMIT` items behind: read the database."""


OVERFLOWED = Overflowed()


class Closed:
    """The browser has gone: the stream ends."""


CLOSED = Closed()

Item = AnyEvent | Working | Overflowed | Closed


class Subscription:
    def __init__(self, thread_id: ThreadId) -> None:
        self.thread_id = thread_id
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self._overflowed = False

    def offer(self, item: Item) -> None:
        if self._overflowed:
            return
        if self.queue.qsize() >= QUEUE_LIMIT:
            self._overflowed = True
            self.queue.put_nowait(OVERFLOWED)
            return
        self.queue.put_nowait(item)

    def close(self) -> None:
        self.queue.put_nowait(CLOSED)

    async def next(self) -> Item:
        item = await self.queue.get()
        if item is OVERFLOWED:
            self._overflowed = False
        return item


class Fanout:
    def __init__(self) -> None:
        self._streams: dict[ThreadId, set[Subscription]] = {}
        self._working: dict[ThreadId, set[str]] = {}
        self.delivered = 0
        """Items handed to streams (for the benchmark and metrics)."""

    def subscribe(self, thread_id: ThreadId) -> Subscription:
        subscription = Subscription(thread_id)
        self._streams.setdefault(thread_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        streams = self._streams.get(subscription.thread_id)
        if streams is not None:
            streams.discard(subscription)
            if not streams:
                del self._streams[subscription.thread_id]

    def working(self, thread_id: ThreadId) -> frozenset[str]:
        """The roles whose turn in this conversation is running now."""
        return frozenset(self._working.get(thread_id, ()))

    @property
    def open_streams(self) -> int:
        return sum(len(streams) for streams in self._streams.values())

    @property
    def queued(self) -> int:
        """Items handed to open streams and not yet sent to their browsers."""
        return sum(s.queue.qsize() for streams in self._streams.values() for s in streams)

    # --- what the database and the run host tell -------------------------------------------

    def on_commit(self, events: Sequence[AnyEvent], _task_events: Sequence[TaskEvent]) -> None:
        for event in events:
            for subscription in self._streams.get(event.thread_id, ()):
                subscription.offer(event)
                self.delivered += 1

    def on_activity(self, thread_id: ThreadId, role: str, working: bool) -> None:
        roles = self._working.setdefault(thread_id, set())
        (roles.add if working else roles.discard)(role)
        if not roles:
            del self._working[thread_id]
        for subscription in self._streams.get(thread_id, ()):
            subscription.offer(Working(role, working))


class ViewerState:
    """Whether the viewer is active in the conversation, kept up to date from the stream."""

    def __init__(self, viewer: Address, state: ParticipantState) -> None:
        self.viewer = viewer
        self.active = state is ParticipantState.ACTIVE

    def sees(self, event: AnyEvent) -> bool:
        if isinstance(event, StateChange) and event.participant == self.viewer:
            self.active = event.to_state is ParticipantState.ACTIVE
            return True
        return self.active
