"""Committed events: an in-process bus that only nudges.

Storage publishes a stream's head once everything up to it has been committed and handed to this
process's listeners (`Database.listen`): on SQLite right after each commit; on PostgreSQL also
when another replica's commits have been read (`core.storage.follow`). The timeline has one bus
(`Database.bus`), the task events another (`Database.task_bus`). A listener never receives
events from the bus; it is woken, then reads what is new after its own cursor from the database,
so news survives a restart and a slow listener cannot lose anything. Many listeners share one
bus; a nudge costs nothing per listener beyond waking it.
"""

from __future__ import annotations

import asyncio


class CommittedEvents:
    def __init__(self) -> None:
        self._head = 0
        self._changed = asyncio.Event()

    @property
    def head(self) -> int:
        """The highest position published: it and everything before it are committed."""
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
