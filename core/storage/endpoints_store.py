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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from core.model.endpoints import (
    Cursors,
    Endpoint,
    EndpointId,
    EndpointStatus,
    Filters,
    Standing,
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
from core.storage.rows import from_micros, to_micros
from core.storage.tasks_store import event_from_row
from core.storage.transact import Transactor
from core.storage.writer import Writer

_ep, _c, _te = schema.endpoints, schema.stream_positions, schema.task_events
_HEADS = select(_c.c.stream, _c.c.value).where(
    _c.c.stream.in_([schema.EVENTS_STREAM, schema.TASK_EVENTS_STREAM])
)
START, TASK_START = "from_position", "from_task_position"
"""The fields positions come in, named in errors."""
_ENDPOINT = select(_ep).where(_ep.c.id == bindparam("id"))
_TASK_EVENTS_SINCE = (
    select(_te)
    .where(_te.c.position > bindparam("after"))
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
    values = {row.stream: row.value for row in connection.execute(_HEADS)}
    return Cursors(
        position=int(values.get(schema.EVENTS_STREAM, 0)),
        task_position=int(values.get(schema.TASK_EVENTS_STREAM, 0)),
    )


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
    events (inclusive; None: the head, only what comes next)."""

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
        return lambda: changed == 1


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
        batch.connection.execute(delete(_ep).where(_ep.c.id == self.endpoint_id))
        return lambda: endpoint


# --- reads --------------------------------------------------------------------------------------


def task_events_since(connection: Connection, after: int, limit: int) -> list[TaskEvent]:
    rows = connection.execute(_TASK_EVENTS_SINCE, {"after": after, "limit": limit})
    return [event_from_row(row) for row in rows]


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
        return await self._writer.run(CreateEndpoint(url, secret, filters, start, task_start))

    async def record(
        self,
        endpoint_id: EndpointId,
        *,
        seen: Cursors,
        cursors: Cursors,
        standing: Standing,
        fence: Fence | None = None,
    ) -> bool:
        """False when the row is not as seen; `LeaseLost` when `fence` is no longer the lease's."""
        return await self._writer.run(RecordAttempt(endpoint_id, seen, cursors, standing, fence))

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

    async def task_events_since(self, position: int, *, limit: int) -> list[TaskEvent]:
        """Task events of every task with a position past `position`, in position order."""
        return await self._reads.transact(lambda c: task_events_since(c, position, limit))
