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
    db.retention     # removes messages, memory, transcripts, delivery records past retention
    db.erasure       # erases a person: tombstones, identities, memory, transcripts
    db.leases    # who holds a run or a delivery, and until when (several replicas)
    db.replicas  # the replicas serving this database, their heartbeats, the cluster's facts
    db.budgets   # turns' tool calls, counted wherever they land (several replicas)
    db.rates     # token buckets every replica shares (the widget's posting rate)
    db.approvals # what agents ask people before they act, answered exactly once
    db.operators # named operator tokens (only their digests), made, listed, revoked
    db.audit     # the audit trail of operator actions, in commit order
    db.console   # the operator console's sessions, the overview's counts, finding people
    await db.close()

The schema must be current (`upgrade_schema`). After each commit the writer hands the appended
events to `on_appended` (for metrics: what this process appended). Every listener added with
`db.listen(…)` (the run host's router, the widget fan-out, Slack delivery, outbound endpoints)
hears the timeline events and task events of every commit, in position order, once; then the
buses (`db.bus` for the timeline, `db.task_bus` for task events) publish the heads handed out:

- SQLite (one process): straight from the writer, right after each commit.
- PostgreSQL (any number of replicas sharing the database): through `core.storage.follow`,
  which hands out this process's commits at once and the other replicas' as soon as a
  notification (`db.notifications`, LISTEN/NOTIFY: `core.storage.notify`) or its safety poll
  tells of them, reading them from the database. `db.notifications` is there for other
  cross-replica news too (free-form channels); it is None on SQLite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent
from core.storage.approvals_store import SqlApprovalRepository
from core.storage.audit_store import SqlAuditTrail
from core.storage.budgets_store import SqlToolBudgets
from core.storage.bus import CommittedEvents
from core.storage.console_store import SqlConsole
from core.storage.endpoints_store import SqlEndpointRepository
from core.storage.engine import create_engine, create_sqlite_sync_engine, is_sqlite
from core.storage.erasure_store import SqlErasure
from core.storage.follow import POLL_EVERY, Follower, Listener, dispatch, read_heads
from core.storage.housekeeping_store import SqlHousekeeping
from core.storage.leases_store import SqlLeases
from core.storage.memory_store import SqlMemoryRepository
from core.storage.migrate import upgrade_schema
from core.storage.notify import PgNotifications
from core.storage.operators_store import SqlOperatorTokens
from core.storage.people_store import SqlPeopleRepository
from core.storage.rates_store import SqlRateBuckets
from core.storage.replicas_store import SqlReplicas
from core.storage.retention_store import SqlRetention
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

__all__ = ["Database", "Listener", "open_database", "upgrade_schema"]


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
    retention: SqlRetention
    erasure: SqlErasure
    leases: SqlLeases
    replicas: SqlReplicas
    budgets: SqlToolBudgets
    rates: SqlRateBuckets
    approvals: SqlApprovalRepository
    operators: SqlOperatorTokens
    audit: SqlAuditTrail
    console: SqlConsole
    bus: CommittedEvents
    _writer: Writer
    _writes: Transactor
    _reads: Transactor
    task_bus: CommittedEvents = field(default_factory=CommittedEvents)
    notifications: PgNotifications | None = None
    _follower: Follower | None = None
    _listeners: list[Listener] = field(default_factory=list)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with the timeline events and task events of every commit, by this
        process or (on PostgreSQL) any replica, in position order and once each; returns the
        function that stops it. Listeners must be quick; one that raises is logged, and the
        others still hear."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def close(self) -> None:
        """Commit what is queued, then let go of every connection."""
        await self._writer.stop()
        if self._follower is not None:
            await self._follower.stop()
        if self.notifications is not None:
            await self.notifications.close()
        await self._writes.close()
        await self._reads.close()


async def open_database(
    url: str,
    *,
    bus: CommittedEvents | None = None,
    task_bus: CommittedEvents | None = None,
    clock: Callable[[], datetime] = utc_now,
    on_appended: Callable[[Sequence[AnyEvent]], None] | None = None,
    max_batch: int = 256,
    safety_poll: float = POLL_EVERY,
    on_notify_lag: Callable[[float], None] | None = None,
) -> Database:
    """`safety_poll`: seconds between the follower's reads of the heads (PostgreSQL), for
    notifications that were lost; `on_notify_lag`: called with the seconds each commit
    notification took to arrive, from the replica that sent it (its own included; PostgreSQL)."""
    bus = bus or CommittedEvents()
    task_bus = task_bus or CommittedEvents()
    listeners: list[Listener] = []
    writes, reads = _transactors(url)
    follower: Follower | None = None
    if not is_sqlite(url):
        follower = Follower(
            reads,
            listeners=listeners,
            bus=bus,
            task_bus=task_bus,
            poll_every=safety_poll,
            on_lag=on_notify_lag,
        )

    def committed(events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        if events and on_appended is not None:
            on_appended(events)
        if follower is not None:
            follower.committed(events, task_events)
            return
        dispatch(listeners, events, task_events)
        if events:
            bus.publish(events[-1].position)
        if task_events:
            task_bus.publish(task_events[-1].position)

    writer = Writer(
        writes,
        clock=clock,
        on_commit=committed,
        max_batch=max_batch,
        multi_writer=not is_sqlite(url),
    )
    writer.start()
    repository = SqlThreadRepository(reads, writer)
    notifications: PgNotifications | None = None
    try:
        if follower is None:
            heads = await reads.transact(read_heads)
            bus.publish(heads.events)
            task_bus.publish(heads.tasks)
        else:
            notifications = await PgNotifications.open(url)
            await follower.start(notifications)
    except BaseException:  # the database is out of reach (or worse): let go of all of it
        await writer.stop()
        if follower is not None:
            await follower.stop()
        if notifications is not None:
            await notifications.close()
        await writes.close()
        await reads.close()
        raise
    approvals = SqlApprovalRepository(reads, writer, clock)
    listeners.append(approvals.heard)
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
        retention=SqlRetention(writer),
        erasure=SqlErasure(reads, writer),
        leases=SqlLeases(reads, writer),
        replicas=SqlReplicas(reads, writer),
        budgets=SqlToolBudgets(reads, writer),
        rates=SqlRateBuckets(writer),
        approvals=approvals,
        operators=SqlOperatorTokens(reads, writer),
        audit=SqlAuditTrail(reads, writer),
        console=SqlConsole(reads, writer),
        bus=bus,
        task_bus=task_bus,
        notifications=notifications,
        _writer=writer,
        _writes=writes,
        _reads=reads,
        _follower=follower,
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
        AsyncTransactor(create_engine(url, pool_size=READ_CONNECTIONS * 4, serving=True)),
    )
