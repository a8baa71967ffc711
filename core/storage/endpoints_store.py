"""Outbound endpoints in SQL: their filters, standing and cursors (`core.model.endpoints`), and the
task-event stream they read.

A new endpoint's cursors are taken inside the writer's transaction from the stream counters, so
it starts exactly at the head of both streams (or where it was told). The delivery worker moves
them with `RecordAttempt`, a compare-and-set: it names the cursors it last stored, and nothing
changes when the row says otherwise — an operator replayed or deleted the endpoint meanwhile, or
parked or disabled it went — so an answer that arrives late never undoes a replay. With several
replicas, each endpoint is delivered by the holder of its lease (`LeaseKind.ENDPOINT`, the
endpoint's id), and `RecordAttempt` names the holder's fence: a replica that lost the lease
cannot move the cursors or the standing (`LeaseLost`).

The delivery log (`endpoint_attempts`): a recorded attempt is appended to its endpoint's log in
the same write, numbered per endpoint, so the log holds exactly the attempts whose outcome the
row took (an attempt refused by the compare-and-set is not logged); only the newest
`KEPT_ATTEMPTS` are kept. Reads add what lies ahead of an endpoint (`Backlog`): how many
committed events are past its cursors, and its latest failed attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from core.model.endpoints import (
    Cursors,
    Delivery,
    Endpoint,
    EndpointId,
    EndpointStatus,
    Filters,
    Standing,
    Tried,
    cursor_before,
    replayed,
)
from core.model.errors import NotFound
from core.model.leases import Fence, LeaseKind
from core.model.tasks import TaskEvent
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.ids import new_id
from core.storage.leases_store import check_fence
from core.storage.positions import committed, handed_out, read_committed
from core.storage.rows import from_micros, to_micros
from core.storage.tasks_store import event_from_row
from core.storage.transact import Transactor
from core.storage.writer import Writer

_ep, _te = schema.endpoints, schema.task_events
_at, _ev = schema.endpoint_attempts, schema.events
KEPT_ATTEMPTS = 1_000
"""How many of its newest attempts an endpoint's delivery log keeps."""
START, TASK_START = "from_position", "from_task_position"
"""The fields positions come in, named in errors."""
_ENDPOINT = select(_ep).where(_ep.c.id == bindparam("id"))
_TASK_EVENTS_SINCE = (
    select(_te)
    .where(_te.c.position > bindparam("after"), _te.c.position <= bindparam("upto"))
    .order_by(_te.c.position)
    .limit(bindparam("limit"))
)


def endpoint_from_row(row: Any) -> Endpoint:
    next_at = row.next_attempt_at
    return Endpoint(
        id=EndpointId(row.id),
        url=row.url,
        secret=row.secret,
        filters=Filters(
            kinds=frozenset(row.kinds), roles=frozenset(row.roles), threads=frozenset(row.threads)
        ),
        standing=Standing(
            status=EndpointStatus(row.status),
            failures=row.failures,
            reason=row.reason,
            next_attempt_at=from_micros(next_at) if next_at is not None else None,
        ),
        cursors=Cursors(position=row.position, task_position=row.task_position),
        created_at=from_micros(row.created_at),
        updated_at=from_micros(row.updated_at),
    )


def _heads(connection: Reads) -> Cursors:
    """Where each stream's positions have got to (`core.storage.positions.handed_out`)."""
    heads = handed_out(connection)  # type: ignore[arg-type]
    return Cursors(position=heads.events, task_position=heads.tasks)


def _standing_values(standing: Standing) -> dict[str, Any]:
    at = standing.next_attempt_at
    return {
        "status": standing.status.value,
        "failures": standing.failures,
        "reason": standing.reason,
        "next_attempt_at": to_micros(at) if at is not None else None,
    }


def _get(connection: Reads, endpoint_id: str) -> Endpoint:
    row = connection.execute(_ENDPOINT, {"id": endpoint_id}).first()
    if row is None:
        raise NotFound(f"no endpoint with id {endpoint_id!r}", code="endpoint_not_found")
    return endpoint_from_row(row)


@dataclass(frozen=True, slots=True)
class CreateEndpoint(NoRuns):
    """A new endpoint, delivering from `start` in the timeline and `task_start` in the task
    events (inclusive; None: the positions handed out, only what comes next — the repository
    passes the committed heads instead, `SqlEndpointRepository.create`)."""

    url: str
    secret: str
    filters: Filters
    start: int | None = None
    task_start: int | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[int, int]:
        """The cursors the endpoint starts at."""
        heads = _heads(batch.connection)
        position = cursor_before(self.start, heads.position, name=START)
        return position, cursor_before(self.task_start, heads.task_position, name=TASK_START)

    def write(self, batch: Batch, plan: tuple[int, int]) -> Callable[[], Endpoint]:
        position, task_position = plan
        endpoint_id = new_id()
        kinds = self.filters.to_json()
        batch.connection.execute(
            insert(_ep).values(
                id=endpoint_id,
                url=self.url,
                secret=self.secret,
                kinds=kinds["kinds"],
                roles=kinds["roles"],
                threads=kinds["threads"],
                position=position,
                task_position=task_position,
                created_at=batch.now,
                updated_at=batch.now,
                **_standing_values(Standing(status=EndpointStatus.ACTIVE)),
            )
        )
        endpoint = _get(batch.connection, endpoint_id)
        return lambda: endpoint


@dataclass(frozen=True, slots=True)
class RecordAttempt(NoRuns):
    """The worker's account of an attempt (or of events its filters passed over): the cursors
    it stored last (`seen`), the ones it has reached, and the standing now. False, changing
    nothing, when the row is no longer active at `seen`. `fence`: the worker's claim on the
    endpoint's lease (`LeaseLost` when it is not the lease's any more; None: the only process)."""

    endpoint_id: EndpointId
    seen: Cursors
    cursors: Cursors
    standing: Standing
    fence: Fence | None = None
    tried: Tried | None = None
    """The attempt, for the delivery log (None: events the filters passed over)."""
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        # The update itself says whether the row is still as the worker saw it.
        if self.fence is not None:
            check_fence(batch, LeaseKind.ENDPOINT, self.endpoint_id, self.fence)

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        changed = batch.connection.execute(
            update(_ep)
            .where(
                _ep.c.id == self.endpoint_id,
                _ep.c.status == EndpointStatus.ACTIVE.value,
                _ep.c.position == self.seen.position,
                _ep.c.task_position == self.seen.task_position,
            )
            .values(
                position=self.cursors.position,
                task_position=self.cursors.task_position,
                updated_at=batch.now,
                **_standing_values(self.standing),
            )
        ).rowcount
        if changed == 1 and self.tried is not None:
            _log_attempt(batch, self.endpoint_id, self.tried, self.standing)
        return lambda: changed == 1


def _log_attempt(batch: Batch, endpoint_id: EndpointId, tried: Tried, standing: Standing) -> None:
    """Append the attempt to the endpoint's delivery log, and forget what falls off its end."""
    last = batch.connection.execute(
        select(func.max(_at.c.seq)).where(_at.c.endpoint_id == endpoint_id)
    ).scalar()
    seq = int(last or 0) + 1
    batch.connection.execute(
        insert(_at).values(
            endpoint_id=endpoint_id,
            seq=seq,
            at=batch.now,
            event_id=tried.event_id,
            event_type=tried.event_type,
            position=tried.position,
            http_status=tried.attempt.status,
            outcome=tried.attempt.describe(),
            delivered=tried.attempt.delivered,
            status=standing.status.value,
            failures=standing.failures,
        )
    )
    if seq > KEPT_ATTEMPTS:
        batch.connection.execute(
            delete(_at).where(_at.c.endpoint_id == endpoint_id, _at.c.seq <= seq - KEPT_ATTEMPTS)
        )


@dataclass(frozen=True, slots=True)
class ReplayEndpoint(NoRuns):
    """Move the cursors (to deliver again from these positions, inclusive; None leaves one as
    it is) and make the endpoint active with a clean slate."""

    endpoint_id: EndpointId
    start: int | None = None
    task_start: int | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[Standing, int, int]:
        """The endpoint's standing and cursors after the replay."""
        current = _get(batch.connection, self.endpoint_id)
        standing = replayed(current.standing)
        heads = _heads(batch.connection)
        position, task_position = current.cursors.position, current.cursors.task_position
        if self.start is not None:
            position = cursor_before(self.start, heads.position, name=START)
        if self.task_start is not None:
            task_position = cursor_before(self.task_start, heads.task_position, name=TASK_START)
        return standing, position, task_position

    def write(self, batch: Batch, plan: tuple[Standing, int, int]) -> Callable[[], Endpoint]:
        standing, position, task_position = plan
        batch.connection.execute(
            update(_ep)
            .where(_ep.c.id == self.endpoint_id)
            .values(
                position=position,
                task_position=task_position,
                updated_at=batch.now,
                **_standing_values(standing),
            )
        )
        endpoint = _get(batch.connection, self.endpoint_id)
        return lambda: endpoint


@dataclass(frozen=True, slots=True)
class DeleteEndpoint(NoRuns):
    endpoint_id: EndpointId
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> Endpoint:
        return _get(batch.connection, self.endpoint_id)

    def write(self, batch: Batch, plan: Endpoint) -> Callable[[], Endpoint]:
        endpoint = plan
        batch.connection.execute(delete(_at).where(_at.c.endpoint_id == self.endpoint_id))
        batch.connection.execute(delete(_ep).where(_ep.c.id == self.endpoint_id))
        return lambda: endpoint


# --- reads --------------------------------------------------------------------------------------


def task_events_since(connection: Connection, after: int, limit: int, upto: int) -> list[TaskEvent]:
    """The task events after `after` and at most `upto` (the committed head), in order."""
    rows = connection.execute(_TASK_EVENTS_SINCE, {"after": after, "upto": upto, "limit": limit})
    return [event_from_row(row) for row in rows]


def delivery_from_row(row: Any) -> Delivery:
    return Delivery(
        seq=row.seq,
        at=from_micros(row.at),
        event_id=row.event_id,
        event_type=row.event_type,
        position=row.position,
        http_status=row.http_status,
        outcome=row.outcome,
        delivered=bool(row.delivered),
        status=EndpointStatus(row.status),
        failures=row.failures,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Backlog:
    """What lies ahead of an endpoint: the committed events past its cursors in each stream it
    follows, of the kinds it wants (before its roles and threads filters, which its worker
    applies as it reads: with those, at most this many), and its latest failed attempt."""

    events: int
    task_events: int
    last_failure: Delivery | None

    def to_json(self) -> dict[str, Any]:
        failure = self.last_failure
        return {
            "pending": {"events": self.events, "task_events": self.task_events},
            "last_failure": failure.to_json() if failure is not None else None,
        }


def backlog(connection: Connection, endpoint: Endpoint) -> Backlog:
    filters, cursors = endpoint.filters, endpoint.cursors
    events = task_events = 0
    if filters.wants_timeline:
        events = connection.execute(
            select(func.count())
            .select_from(_ev)
            .where(_ev.c.position > cursors.position, _ev.c.kind.in_(sorted(filters.kinds)))
        ).scalar_one()
    if filters.wants_tasks:
        task_events = connection.execute(
            select(func.count()).select_from(_te).where(_te.c.position > cursors.task_position)
        ).scalar_one()
    failed = connection.execute(
        select(_at)
        .where(_at.c.endpoint_id == endpoint.id, _at.c.delivered.is_(False))
        .order_by(_at.c.seq.desc())
        .limit(1)
    ).first()
    return Backlog(
        events=int(events),
        task_events=int(task_events),
        last_failure=delivery_from_row(failed) if failed is not None else None,
    )


def deliveries(
    connection: Connection, endpoint_id: str, *, before: int | None, failed: bool, limit: int
) -> tuple[list[Delivery], bool]:
    """The endpoint's logged attempts, newest first, before `seq` `before`; `failed`: only
    the failed ones. And whether older ones remain."""
    _get(connection, endpoint_id)  # NotFound for an unknown endpoint
    query = select(_at).where(_at.c.endpoint_id == endpoint_id)
    if before is not None:
        query = query.where(_at.c.seq < before)
    if failed:
        query = query.where(_at.c.delivered.is_(False))
    rows = connection.execute(query.order_by(_at.c.seq.desc()).limit(limit + 1)).all()
    return [delivery_from_row(row) for row in rows[:limit]], len(rows) > limit


class SqlEndpointRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def create(
        self,
        *,
        url: str,
        secret: str,
        filters: Filters,
        start: int | None = None,
        task_start: int | None = None,
    ) -> Endpoint:
        if start is None or task_start is None:
            # Only what comes next: from the committed heads. On PostgreSQL an event another
            # replica is committing now may lie below the positions handed out; a cursor there
            # would pass over it for good, one here may deliver events of moments before.
            heads = await committed(self._reads)
            start = heads.events + 1 if start is None else start
            task_start = heads.tasks + 1 if task_start is None else task_start
        return await self._writer.run(CreateEndpoint(url, secret, filters, start, task_start))

    async def record(
        self,
        endpoint_id: EndpointId,
        *,
        seen: Cursors,
        cursors: Cursors,
        standing: Standing,
        fence: Fence | None = None,
        tried: Tried | None = None,
    ) -> bool:
        """False when the row is not as seen; `LeaseLost` when `fence` is no longer the lease's.
        `tried`, the attempt that led here, joins the endpoint's delivery log when recorded."""
        return await self._writer.run(
            RecordAttempt(endpoint_id, seen, cursors, standing, fence, tried)
        )

    async def replay(
        self, endpoint_id: EndpointId, *, start: int | None = None, task_start: int | None = None
    ) -> Endpoint:
        return await self._writer.run(ReplayEndpoint(endpoint_id, start, task_start))

    async def delete(self, endpoint_id: EndpointId) -> Endpoint:
        """Delete the endpoint; what it was."""
        return await self._writer.run(DeleteEndpoint(endpoint_id))

    async def get(self, endpoint_id: str) -> Endpoint:
        return await self._reads.transact(lambda c: _get(c, endpoint_id))

    async def all(self) -> list[Endpoint]:
        """Every endpoint, oldest first."""

        def read(c: Connection) -> list[Endpoint]:
            return [endpoint_from_row(r) for r in c.execute(select(_ep).order_by(_ep.c.id))]

        return await self._reads.transact(read)

    async def with_backlog(self, endpoint_id: str) -> tuple[Endpoint, Backlog]:
        """The endpoint and what lies ahead of it, in one snapshot."""

        def read(c: Connection) -> tuple[Endpoint, Backlog]:
            endpoint = _get(c, endpoint_id)
            return endpoint, backlog(c, endpoint)

        return await self._reads.transact(read)

    async def all_with_backlog(self) -> list[tuple[Endpoint, Backlog]]:
        """Every endpoint, oldest first, with what lies ahead of it, in one snapshot."""

        def read(c: Connection) -> list[tuple[Endpoint, Backlog]]:
            found = [endpoint_from_row(r) for r in c.execute(select(_ep).order_by(_ep.c.id))]
            return [(endpoint, backlog(c, endpoint)) for endpoint in found]

        return await self._reads.transact(read)

    async def deliveries(
        self, endpoint_id: str, *, before: int | None = None, failed: bool = False, limit: int = 50
    ) -> tuple[list[Delivery], bool]:
        """The endpoint's delivery log, newest first (`NotFound` for an unknown endpoint)."""
        return await self._reads.transact(
            lambda c: deliveries(c, endpoint_id, before=before, failed=failed, limit=limit)
        )

    async def task_events_since(self, position: int, *, limit: int) -> list[TaskEvent]:
        """Task events of every task with a position past `position`, in position order."""
        return await read_committed(
            self._reads, lambda c, heads: task_events_since(c, position, limit, heads.tasks)
        )
