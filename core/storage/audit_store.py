"""The audit trail in SQL (`audit_records`): recorded, read in pages, pruned past its retention.

`RecordAction` takes the next position of the `audit` stream inside the writer's transaction, as
the timeline takes its positions (`core.storage.positions`): the records of one batch take
theirs at once and are inserted together (`Batch.insert_positioned`). Pages are read up to the
stream's committed head, so a reader that resumes after a position never misses a record
(`page`), whichever replica recorded it.

Nothing here changes a record. `prune` deletes those recorded longer ago than a time kept (by the
writer's clock, as every time of the trail), at most `limit` a write batch, so housekeeping never
holds the writer long (`gateway.housekeeping`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Select, delete, select

from core.model.audit import Action, AuditRecord
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.housekeeping_store import CHUNK
from core.storage.positions import read_committed
from core.storage.rows import from_micros
from core.storage.transact import Transactor
from core.storage.writer import Writer

_a = schema.audit_records
_RECORD_COLUMNS = ("at", "actor", "client", "action", "detail", "request_id")
_MICROSECOND = timedelta(microseconds=1)


def record_from_row(row: Any) -> AuditRecord:
    return AuditRecord(
        position=row.position,
        at=from_micros(row.at),
        actor=row.actor,
        client=row.client,
        action=row.action,
        detail=row.detail,
        request_id=row.request_id,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditPage:
    """Records in position order. Forward (`after`): `next` is the `after` of the following page
    (the last position returned, or `after` itself when none was), `more` whether any lies
    beyond. Backward (`before`, or the newest page): `next` is the `before` of the earlier page
    (the first position returned), None when nothing is earlier."""

    records: Sequence[AuditRecord]
    next: int | None
    more: bool


@dataclass(frozen=True, slots=True)
class RecordAction(NoRuns):
    action: Action
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], AuditRecord]:
        done = self.action
        position = batch.insert_positioned(
            schema.AUDIT_STREAM,
            _a,
            _RECORD_COLUMNS,
            (batch.now, done.actor, done.client, done.action, dict(done.detail), done.request_id),
        )
        at = from_micros(batch.now)

        def recorded() -> AuditRecord:
            return AuditRecord(
                position=position(),
                at=at,
                actor=done.actor,
                client=done.client,
                action=done.action,
                detail=dict(done.detail),
                request_id=done.request_id,
            )

        return recorded


@dataclass(frozen=True, slots=True)
class PruneAudit(NoRuns):
    """Delete up to `limit` records made more than `keep` before the batch's time; how many
    went."""

    keep: timedelta
    limit: int = CHUNK
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], int]:
        cut = batch.now - self.keep // _MICROSECOND
        chosen = select(_a.c.position).where(_a.c.at < cut).limit(self.limit)
        deleted = batch.connection.execute(
            delete(_a).where(_a.c.position.in_(chosen.scalar_subquery()))
        ).rowcount
        return lambda: deleted


def _filtered(statement: Select[Any], actor: str | None, action: str | None) -> Select[Any]:
    if actor is not None:
        statement = statement.where(_a.c.actor == actor)
    if action is not None:
        statement = statement.where(_a.c.action == action)
    return statement


def forward(
    connection: Reads, after: int, limit: int, actor: str | None, action: str | None, upto: int
) -> AuditPage:
    """Records after `after`, up to `upto` (the committed head: a reader resuming from `next`
    misses none)."""
    statement = _filtered(
        select(_a).where(_a.c.position > after, _a.c.position <= upto), actor, action
    )
    rows = connection.execute(statement.order_by(_a.c.position).limit(limit + 1)).all()
    page = [record_from_row(row) for row in rows[:limit]]
    return AuditPage(
        records=page, next=page[-1].position if page else after, more=len(rows) > limit
    )


def backward(
    connection: Reads,
    before: int | None,
    limit: int,
    actor: str | None,
    action: str | None,
    upto: int,
) -> AuditPage:
    statement = _filtered(select(_a).where(_a.c.position <= upto), actor, action)
    if before is not None:
        statement = statement.where(_a.c.position < before)
    rows = connection.execute(statement.order_by(_a.c.position.desc()).limit(limit + 1)).all()
    page = [record_from_row(row) for row in rows[:limit]][::-1]
    more = len(rows) > limit
    return AuditPage(records=page, next=page[0].position if more else None, more=more)


class SqlAuditTrail:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def record(self, action: Action) -> AuditRecord:
        return await self._writer.run(RecordAction(action))

    async def page(
        self,
        *,
        after: int | None = None,
        before: int | None = None,
        newest: bool = False,
        limit: int,
        actor: str | None = None,
        action: str | None = None,
    ) -> AuditPage:
        """Forward from `after` (default: the first record), or backward: before `before`, or
        the newest page (`newest`); only `actor`'s records, or `action`'s, when given."""
        if newest or before is not None:
            return await read_committed(
                self._reads, lambda c, h: backward(c, before, limit, actor, action, h.audit)
            )
        return await read_committed(
            self._reads, lambda c, h: forward(c, after or 0, limit, actor, action, h.audit)
        )

    async def prune(self, *, keep: timedelta, limit: int = CHUNK) -> int:
        """Delete every record made more than `keep` ago, `limit` a write batch; how many
        went."""
        deleted = 0
        while True:
            went = await self._writer.run(PruneAudit(keep, limit))
            deleted += went
            if went < limit:
                return deleted
