"""Committed events: an in-process bus that only nudges.

After a write commits, storage publishes the new head position. A listener never receives events
from the bus; it is woken, then reads what is new after its own cursor from the database, so news
survives a restart and a slow listener cannot lose anything. Many listeners share one bus; a
nudge costs nothing per listener beyond waking it.
"""

from __future__ import annotations

import asyncio


class CommittedEvents:
    def __init__(self) -> None:
        self._head = 0
        self._changed = asyncio.Event()

    @property
    def head(self) -> int:
        """The highest position known to be committed in this process."""
        return self._head

    def publish(self, position: int) -> None:
        """Called after a commit: everything up to `position` is committed."""
        if position <= self._head:
            return
        self._head = position
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_beyond(self, cursor: int) -> int:
        """Wait until the head passes `cursor`; return the head. Bound it with asyncio.timeout."""
        while self._head <= cursor:
            await self._changed.wait()
        return self._head
