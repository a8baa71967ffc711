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
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from core.model.tasks import Actor, Task, TaskEvent
from core.model.timeline import ThreadId
from core.model.webhooks import Ignored, Mapped, Plan, plan
from core.storage import schema
from core.storage.batch import Batch, BatchView, Command, NoRuns, Reads
from core.storage.tasks_store import (
    CreateTask,
    UpdateTask,
    comment_as,
    lock_external,
    task_by_external,
    task_row,
)
from core.storage.transact import Transactor
from core.storage.writer import Writer

_d = schema.webhook_deliveries
P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    """What a delivery did: nothing when it is a `duplicate` or `ignored` (the reason); else
    the item's `task` as it is now and the task `events` it made (none: the task already said
    what the delivery says)."""

    duplicate: bool = False
    ignored: str | None = None
    task: Task | None = None
    events: Sequence[TaskEvent] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    """What the check of a delivery found: a repeat, or the item's task (locked) and the steps
    the delivery takes (none: it is ignored)."""

    duplicate: bool = False
    task: Task | None = None
    steps: Plan | None = None


@dataclass(frozen=True, slots=True)
class ReceiveDelivery(NoRuns):
    source: str
    delivery_id: str
    mapped: Mapped
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> _Seen:
        if _recorded(batch.connection, self.source, self.delivery_id):
            return _Seen(duplicate=True)
        if isinstance(self.mapped, Ignored):
            return _Seen()
        update = self.mapped
        lock_external(batch.connection, update.ref)
        task = task_by_external(batch.connection, update.ref, lock=True)
        return _Seen(task=task, steps=plan(task, update))  # may refuse the payload

    def write(self, batch: Batch, seen: _Seen) -> Callable[[], Received]:
        if seen.duplicate:
            return lambda: Received(duplicate=True)
        if seen.steps is None:
            assert isinstance(self.mapped, Ignored)
            first = _record(batch, self.source, self.delivery_id)
            reason = self.mapped.reason
            return lambda: Received(duplicate=not first, ignored=reason if first else None)
        if not _record(batch, self.source, self.delivery_id):
            return lambda: Received(duplicate=True)
        assert not isinstance(self.mapped, Ignored)
        ref, steps, task = self.mapped.ref, seen.steps, seen.task
        actor = Actor.source(self.source)
        events: list[TaskEvent] = []
        if steps.create is not None:
            new = steps.create
            task, created = _carry_out(batch, CreateTask(new.title, new.body, None, ref, actor))
            events.append(created)
        assert task is not None
        for change in steps.changes:
            task, changed = _carry_out(batch, UpdateTask(task.id, change, actor))
            events.extend([changed] if changed is not None else [])
        if steps.comment is not None:
            events.extend(comment_as(batch, task, [steps.comment], actor))
        now = task_row(batch.connection, task.id)
        return lambda: Received(task=now, events=tuple(events))


def _carry_out(batch: Batch, command: Command[P, R]) -> R:
    """A task command as part of this one: its check (which the delivery's check made sure
    holds: the item's task is locked and was planned for), its write, its answer."""
    return command.write(batch, command.check(batch.view))()


def _recorded(connection: Reads, source: str, delivery_id: str) -> bool:
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
