"""Inbound webhook deliveries: each recorded once, together with everything it does.

`ReceiveDelivery` is one writer command, so one transaction holds the record of the delivery
(`webhook_deliveries`, by source and delivery id) and all its effects: the item's task created or
updated, the source's comment, the subscriptions waiting for the item turned into subscriptions
of its new task. The sender's 2xx follows the commit; the nudges follow from the committed task
events (the run host's after-commit listener), like any other task change.

A delivery seen before — a retry, a replay, the same delivery to another replica — finds its
record and changes nothing. The command plans before it writes (`core.model.webhooks.plan` may
refuse the payload), so a refused delivery leaves no record and may be sent again once fixed. The
record is inserted with "on conflict do nothing" just before the effects: two replicas racing with
one delivery both get past the first look, and only the one whose insert lands goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite

from core.model.tasks import Actor, Task, TaskEvent
from core.model.timeline import ThreadId
from core.model.webhooks import Ignored, Mapped, plan
from core.storage import schema
from core.storage.tasks_store import (
    CreateTask,
    UpdateTask,
    comment_as,
    lock_external,
    task_by_external,
    task_row,
)
from core.storage.transact import Transactor
from core.storage.writer import Batch, Writer

_d = schema.webhook_deliveries


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    """What a delivery did: nothing when it is a `duplicate` or `ignored` (the reason); else
    the item's `task` as it is now and the task `events` it made (none: the task already said
    what the delivery says)."""

    duplicate: bool = False
    ignored: str | None = None
    task: Task | None = None
    events: Sequence[TaskEvent] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class ReceiveDelivery:
    source: str
    delivery_id: str
    mapped: Mapped
    thread_ids: Sequence[ThreadId] = ()

    def apply(self, batch: Batch) -> Callable[[], Received]:
        if _recorded(batch.connection, self.source, self.delivery_id):
            return lambda: Received(duplicate=True)
        if isinstance(self.mapped, Ignored):
            first = _record(batch, self.source, self.delivery_id)
            reason = self.mapped.reason
            return lambda: Received(duplicate=not first, ignored=reason if first else None)
        update = self.mapped
        lock_external(batch, update.ref)
        task = task_by_external(batch.connection, update.ref, lock=True)
        steps = plan(task, update)  # may refuse the payload: nothing is written yet
        if not _record(batch, self.source, self.delivery_id):
            return lambda: Received(duplicate=True)
        actor = Actor.source(self.source)
        events: list[TaskEvent] = []
        if steps.create is not None:
            new = steps.create
            task, created = CreateTask(new.title, new.body, None, update.ref, actor).apply(batch)()
            events.append(created)
        assert task is not None
        for change in steps.changes:
            task, changed = UpdateTask(task.id, change, actor).apply(batch)()
            events.extend([changed] if changed is not None else [])
        if steps.comment is not None:
            events.extend(comment_as(batch, task.id, [steps.comment], actor))
        now = task_row(batch.connection, task.id)
        return lambda: Received(task=now, events=tuple(events))


def _recorded(connection: Connection, source: str, delivery_id: str) -> bool:
    found = connection.execute(
        select(_d.c.source).where(_d.c.source == source, _d.c.delivery_id == delivery_id)
    ).first()
    return found is not None


def _record(batch: Batch, source: str, delivery_id: str) -> bool:
    """Record the delivery; False when another transaction recorded it first."""
    dialect = postgresql if batch.connection.dialect.name == "postgresql" else sqlite
    inserted = batch.connection.execute(
        dialect.insert(_d)
        .values(source=source, delivery_id=delivery_id, received_at=batch.now)
        .on_conflict_do_nothing(index_elements=["source", "delivery_id"])
    )
    return inserted.rowcount == 1


class SqlWebhookRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def receive(self, source: str, delivery_id: str, mapped: Mapped) -> Received:
        """Record the delivery and do what it says, in one transaction (once per delivery id)."""
        return await self._writer.run(ReceiveDelivery(source, delivery_id, mapped))

    async def delivered(self, source: str, delivery_id: str) -> bool:
        """Whether the delivery has been recorded."""
        return await self._reads.transact(lambda c: _recorded(c, source, delivery_id))
