"""Opening the database: engines, the group-commit writer and the thread repository.

    db = await open_database(url, bus=CommittedEvents(), on_appended=count)
    db.threads   # the ThreadRepository
    await db.close()

The schema must be current (`upgrade_schema`). After each commit the writer nudges the bus with
the new head position and hands the appended events to `on_appended` (for metrics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from core.bus import CommittedEvents
from core.storage.engine import create_engine, create_sqlite_writer_engine, is_sqlite
from core.storage.migrate import upgrade_schema
from core.storage.sql_threads import SqlThreadRepository
from core.storage.transact import AsyncTransactor, ThreadTransactor, Transactor
from core.storage.writer import Writer
from core.timeline import AnyEvent

__all__ = ["Database", "open_database", "upgrade_schema"]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Database:
    threads: SqlThreadRepository
    bus: CommittedEvents
    reader: AsyncEngine
    _writer: Writer
    _transactor: Transactor

    async def close(self) -> None:
        await self._writer.stop()
        await self._transactor.close()
        await self.reader.dispose()


async def open_database(
    url: str,
    *,
    bus: CommittedEvents | None = None,
    clock: Callable[[], datetime] = utc_now,
    on_appended: Callable[[Sequence[AnyEvent]], None] | None = None,
    max_batch: int = 256,
) -> Database:
    bus = bus or CommittedEvents()

    def committed(events: Sequence[AnyEvent]) -> None:
        if on_appended is not None:
            on_appended(events)
        bus.publish(events[-1].position)

    transactor: Transactor = (
        ThreadTransactor(create_sqlite_writer_engine(url))
        if is_sqlite(url)
        else AsyncTransactor(create_engine(url, pool_size=1, writer=True))
    )
    reader = create_engine(url, pool_size=8)
    writer = Writer(transactor, clock=clock, on_commit=committed, max_batch=max_batch)
    writer.start()
    repository = SqlThreadRepository(reader, writer)
    bus.publish(await repository.head())
    return Database(
        threads=repository, bus=bus, reader=reader, _writer=writer, _transactor=transactor
    )
