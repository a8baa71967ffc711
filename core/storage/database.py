"""Opening the database: engines, the group-commit writer and the thread repository.

    db = await open_database(url, bus=CommittedEvents(), on_appended=count)
    db.threads   # the ThreadRepository
    db.runs      # runs, their sessions and turns
    db.memory    # the roles' agent memory
    db.tasks     # tasks and their events
    db.subscriptions  # which conversation runs watch which tasks
    db.people    # persons, their channel identities, link codes and merges
    db.endpoints # outbound webhook endpoints, their cursors, and the task-event stream
    db.webhooks  # inbound webhook deliveries, each recorded with what it did
    db.housekeeping  # deletes delivery receipts and OAuth states once their time has passed
    await db.close()

The schema must be current (`upgrade_schema`). After each commit the writer nudges the bus with
the new head position and hands the appended events to `on_appended` (for metrics) and to every
listener added with `db.listen(…)` (the run host's router: it learns whom to nudge without
reading back what this process has just written).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent
from core.storage.bus import CommittedEvents
from core.storage.endpoints_store import SqlEndpointRepository
from core.storage.engine import create_engine, create_sqlite_sync_engine, is_sqlite
from core.storage.housekeeping_store import SqlHousekeeping
from core.storage.memory_store import SqlMemoryRepository
from core.storage.migrate import upgrade_schema
from core.storage.people_store import SqlPeopleRepository
from core.storage.runs_store import SqlRunRepository
from core.storage.slack_store import SqlSlackRepository
from core.storage.subscriptions_store import SqlSubscriptionRepository
from core.storage.tasks_store import SqlTaskRepository
from core.storage.threads_store import SqlThreadRepository, ThreadRepository
from core.storage.transact import (
    AsyncTransactor,
    SqliteWriteTransactor,
    ThreadTransactor,
    Transactor,
)
from core.storage.webhooks_store import SqlWebhookRepository
from core.storage.writer import Writer

__all__ = ["Database", "open_database", "upgrade_schema"]


Listener = Callable[[Sequence[AnyEvent], Sequence[TaskEvent]], None]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Database:
    threads: ThreadRepository
    runs: SqlRunRepository
    memory: SqlMemoryRepository
    tasks: SqlTaskRepository
    subscriptions: SqlSubscriptionRepository
    people: SqlPeopleRepository
    slack: SqlSlackRepository
    endpoints: SqlEndpointRepository
    webhooks: SqlWebhookRepository
    housekeeping: SqlHousekeeping
    bus: CommittedEvents
    _writer: Writer
    _writes: Transactor
    _reads: Transactor
    _listeners: list[Listener] = field(default_factory=list)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with the timeline events and task events of every commit made here,
        right after it; returns the function that stops it. Listeners must be quick and must
        not raise."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def close(self) -> None:
        """Commit what is queued, then let go of every connection."""
        await self._writer.stop()
        await self._writes.close()
        await self._reads.close()


async def open_database(
    url: str,
    *,
    bus: CommittedEvents | None = None,
    clock: Callable[[], datetime] = utc_now,
    on_appended: Callable[[Sequence[AnyEvent]], None] | None = None,
    max_batch: int = 256,
) -> Database:
    bus = bus or CommittedEvents()
    listeners: list[Listener] = []

    def committed(events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        if events and on_appended is not None:
            on_appended(events)
        for listener in listeners:
            listener(events, task_events)
        if events:
            bus.publish(events[-1].position)

    writes, reads = _transactors(url)
    writer = Writer(writes, clock=clock, on_commit=committed, max_batch=max_batch)
    writer.start()
    repository = SqlThreadRepository(reads, writer)
    try:
        bus.publish(await repository.head())
    except BaseException:  # the database is out of reach (or worse): let go of all of it
        await writer.stop()
        await writes.close()
        await reads.close()
        raise
    return Database(
        threads=repository,
        runs=SqlRunRepository(reads, writer),
        memory=SqlMemoryRepository(reads, writer),
        tasks=SqlTaskRepository(reads, writer),
        subscriptions=SqlSubscriptionRepository(reads, writer),
        people=SqlPeopleRepository(reads, writer),
        slack=SqlSlackRepository(reads, writer),
        endpoints=SqlEndpointRepository(reads, writer),
        webhooks=SqlWebhookRepository(reads, writer),
        housekeeping=SqlHousekeeping(writer),
        bus=bus,
        _writer=writer,
        _writes=writes,
        _reads=reads,
        _listeners=listeners,
    )


READ_CONNECTIONS = 4


def _transactors(url: str) -> tuple[Transactor, Transactor]:
    """How writes and reads reach the database: see `core.storage.transact`."""
    if is_sqlite(url):
        return (
            # Two connections: the loop's, and the writer thread's for when the file is locked.
            SqliteWriteTransactor(create_sqlite_sync_engine(url, pool_size=2, writer=True)),
            ThreadTransactor(
                create_sqlite_sync_engine(url, pool_size=READ_CONNECTIONS + 1),  # + the loop's
                threads=READ_CONNECTIONS,
                name="rolecall-reader",
            ),
        )
    return (
        AsyncTransactor(create_engine(url, pool_size=1, writer=True, serving=True)),
        AsyncTransactor(create_engine(url, pool_size=READ_CONNECTIONS * 2, serving=True)),
    )
