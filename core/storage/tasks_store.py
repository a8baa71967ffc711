"""Tasks in SQL: every change is a command for the writer that updates the task row and appends
its task event, in one transaction; reads are functions over one snapshot.

A task made with an external reference takes over the subscriptions waiting for that reference
(`external_subscriptions`) in the same transaction, so the runs that watched the item before it
had a task hear of its creation.

The task row is locked for the change (`SELECT … FOR UPDATE` on PostgreSQL; SQLite's writer
holds the whole file), so a task's event `seq` has no gaps and its events' positions — taken from
the `task_events` counter row inside the transaction — become visible in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, insert, select, update
from sqlalchemy import text as sql

from core.model.errors import Conflict, NotFound
from core.model.tasks import (
    Actor,
    ActorKind,
    ExternalRef,
    Task,
    TaskChange,
    TaskEvent,
    TaskEventKind,
    TaskId,
    TaskStatus,
    diff,
)
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.ids import new_id
from core.storage.rows import from_micros
from core.storage.transact import Transactor
from core.storage.writer import Writer

_t, _e = schema.tasks, schema.task_events
_x = schema.external_subscriptions
_LOCK_EXTERNAL = sql("SELECT pg_advisory_xact_lock(hashtextextended(:ref, 0))")
_TASK = select(_t).where(_t.c.id == bindparam("id"))
_TASK_FOR_UPDATE = _TASK.with_for_update()
_INSERT_TASK = insert(_t)
_INSERT_EVENT = insert(_e)


def task_from_row(row: Any) -> Task:
    external = None
    if row.ext_source is not None:
        external = ExternalRef(source=row.ext_source, key=row.ext_key, url=row.ext_url)
    return Task(
        id=TaskId(row.id),
        title=row.title,
        body=row.body,
        status=TaskStatus(row.status),
        assignee=row.assignee,
        external=external,
        created_at=from_micros(row.created_at),
        updated_at=from_micros(row.updated_at),
        events=row.last_seq,
    )


def event_from_row(row: Any) -> TaskEvent:
    return TaskEvent(
        id=row.id,
        task_id=TaskId(row.task_id),
        seq=row.seq,
        position=row.position,
        at=from_micros(row.at),
        kind=TaskEventKind(row.kind),
        actor=Actor(kind=ActorKind(row.actor_kind), name=row.actor_name, run_id=row.run_id),
        changes=row.changes,
        text=row.text,
    )


def _append(
    batch: Batch,
    task_id: TaskId,
    seq: int,
    kind: TaskEventKind,
    actor: Actor,
    changes: dict[str, Any],
    text: str | None = None,
) -> TaskEvent:
    [position] = batch.take_positions(schema.TASK_EVENTS_STREAM, 1)
    event = TaskEvent(
        id=new_id(),
        task_id=task_id,
        seq=seq,
        position=position,
        at=from_micros(batch.now),
        kind=kind,
        actor=actor,
        changes=changes,
        text=text,
    )
    batch.connection.execute(
        _INSERT_EVENT,
        {
            "position": position,
            "id": event.id,
            "task_id": task_id,
            "seq": seq,
            "at": batch.now,
            "kind": kind.value,
            "actor_kind": actor.kind.value,
            "actor_name": actor.name,
            "run_id": actor.run_id,
            "changes": changes,
            "text": text,
        },
    )
    batch.task_events.append(event)
    return event


def locked_task(connection: Reads, task_id: TaskId) -> Task:
    """The task, its row locked for the change (`task_not_found`)."""
    row = connection.execute(_TASK_FOR_UPDATE, {"id": task_id}).first()
    if row is None:
        raise NotFound(f"no task with id {task_id!r}", code="task_not_found")
    return task_from_row(row)


@dataclass(frozen=True, slots=True)
class CreateTask(NoRuns):
    title: str
    body: str
    assignee: str | None
    external: ExternalRef | None
    actor: Actor
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        if self.external is not None:
            lock_external(batch.connection, self.external)
            taken = batch.connection.execute(
                select(_t.c.id).where(
                    _t.c.ext_source == self.external.source, _t.c.ext_key == self.external.key
                )
            ).first()
            if taken is not None:
                raise Conflict(
                    f"task {taken.id} already refers to {self.external.source}:{self.external.key}",
                    code="external_taken",
                )

    def write(self, batch: Batch, plan: None) -> Callable[[], tuple[Task, TaskEvent]]:
        task_id = TaskId(new_id())
        ext = self.external
        batch.connection.execute(
            _INSERT_TASK,
            {
                "id": task_id,
                "title": self.title,
                "body": self.body,
                "status": TaskStatus.OPEN.value,
                "assignee": self.assignee,
                "ext_source": ext.source if ext else None,
                "ext_key": ext.key if ext else None,
                "ext_url": ext.url if ext else None,
                "created_at": batch.now,
                "updated_at": batch.now,
                "last_seq": 1,
            },
        )
        fields = {
            "title": self.title,
            "body": self.body,
            "status": TaskStatus.OPEN.value,
            "assignee": self.assignee,
            "external": ext.to_json() if ext else None,
        }
        event = _append(batch, task_id, 1, TaskEventKind.CREATED, self.actor, fields)
        if ext is not None:
            _adopt_watchers(batch, task_id, ext, since=event.position - 1)
        task = task_from_row(batch.connection.execute(_TASK, {"id": task_id}).one())
        return lambda: (task, event)


def lock_external(connection: Reads, ref: ExternalRef) -> None:
    """Serialise, across replicas, the transactions that create the task of an external item
    or subscribe to it before it exists (PostgreSQL: a transaction-scoped advisory lock on the
    key; SQLite's writer holds the whole file). Without it a subscription by key and the task's
    creation, committed side by side, would miss each other."""
    if connection.dialect.name == "postgresql":
        connection.execute(_LOCK_EXTERNAL, {"ref": ref.text})


def _adopt_watchers(batch: Batch, task_id: TaskId, ext: ExternalRef, since: int) -> None:
    """Runs that subscribed to the item by its external key before the task existed watch the
    task from now on, its creation included (`since` is just before it)."""
    key = and_(_x.c.ext_source == ext.source, _x.c.ext_key == ext.key)
    run_ids = batch.connection.execute(select(_x.c.run_id).where(key)).scalars().all()
    if not run_ids:
        return
    rows = [{"run_id": r, "task_id": task_id, "since": since, "created_at": batch.now}
            for r in run_ids]  # fmt: skip
    batch.connection.execute(insert(schema.subscriptions), rows)
    batch.connection.execute(delete(_x).where(key))


@dataclass(frozen=True, slots=True)
class UpdateTask(NoRuns):
    task_id: TaskId
    change: TaskChange
    actor: Actor
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[Task, dict[str, dict[str, Any]]]:
        """The task, locked, and what the change changes in it."""
        task = locked_task(batch.connection, self.task_id)
        return task, diff(task, self.change)

    def write(
        self, batch: Batch, plan: tuple[Task, dict[str, dict[str, Any]]]
    ) -> Callable[[], tuple[Task, TaskEvent | None]]:
        task, changes = plan
        if not changes:
            return lambda: (task, None)
        values: dict[str, Any] = {k: v["to"] for k, v in changes.items()}
        seq = task.events + 1
        batch.connection.execute(
            update(_t)
            .where(_t.c.id == self.task_id)
            .values(**values, updated_at=batch.now, last_seq=seq)
        )
        event = _append(batch, self.task_id, seq, TaskEventKind.UPDATED, self.actor, changes)
        after = task_from_row(batch.connection.execute(_TASK, {"id": self.task_id}).one())
        return lambda: (after, event)


def comment_as(batch: Batch, task: Task, texts: Sequence[str], actor: Actor) -> list[TaskEvent]:
    """Append comments to the task (as read with its row locked: `locked_task`), each a task
    event by `actor`."""
    task_id = task.id
    seq = task.events
    events = []
    for text in texts:
        seq += 1
        events.append(_append(batch, task_id, seq, TaskEventKind.COMMENTED, actor, {}, text))
    batch.connection.execute(
        update(_t).where(_t.c.id == task_id).values(updated_at=batch.now, last_seq=seq)
    )
    return events


@dataclass(frozen=True, slots=True)
class CommentOnTask(NoRuns):
    task_id: TaskId
    text: str
    actor: Actor
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> Task:
        return locked_task(batch.connection, self.task_id)

    def write(self, batch: Batch, plan: Task) -> Callable[[], TaskEvent]:
        seq = plan.events + 1
        batch.connection.execute(
            update(_t).where(_t.c.id == self.task_id).values(updated_at=batch.now, last_seq=seq)
        )
        kind = TaskEventKind.COMMENTED
        event = _append(batch, self.task_id, seq, kind, self.actor, {}, self.text)
        return lambda: event


# --- reads ----------------------------------------------------------------------------------


def task_with_events(conn: Connection, task_id: str) -> tuple[Task, list[TaskEvent]]:
    row = conn.execute(_TASK, {"id": task_id}).first()
    if row is None:
        raise NotFound(f"no task with id {task_id!r}", code="task_not_found")
    events = conn.execute(select(_e).where(_e.c.task_id == task_id).order_by(_e.c.seq))
    return task_from_row(row), [event_from_row(e) for e in events]


def task_events_page(
    conn: Connection, task_id: str, after: int, limit: int
) -> tuple[Task, list[TaskEvent], bool]:
    """The task, its events after `seq` `after` in `seq` order (at most `limit`), and whether
    more remain; `NotFound` for an unknown task."""
    row = conn.execute(_TASK, {"id": task_id}).first()
    if row is None:
        raise NotFound(f"no task with id {task_id!r}", code="task_not_found")
    rows = conn.execute(
        select(_e)
        .where(_e.c.task_id == task_id, _e.c.seq > after)
        .order_by(_e.c.seq)
        .limit(limit + 1)
    ).all()
    return task_from_row(row), [event_from_row(e) for e in rows[:limit]], len(rows) > limit


def task_row(conn: Reads, task_id: str) -> Task | None:
    row = conn.execute(_TASK, {"id": task_id}).first()
    return task_from_row(row) if row else None


_BY_EXTERNAL = select(_t).where(
    _t.c.ext_source == bindparam("source"), _t.c.ext_key == bindparam("key")
)
_BY_EXTERNAL_FOR_UPDATE = _BY_EXTERNAL.with_for_update()


def task_by_external(conn: Reads, ref: ExternalRef, *, lock: bool = False) -> Task | None:
    """The task that refers to the external item, if any (`lock`: its row locked)."""
    query = _BY_EXTERNAL_FOR_UPDATE if lock else _BY_EXTERNAL
    row = conn.execute(query, {"source": ref.source, "key": ref.key}).first()
    return task_from_row(row) if row else None


_EVENTS_PAST = (
    select(_e)
    .where(_e.c.task_id == bindparam("task_id"), _e.c.position > bindparam("after"))
    .order_by(_e.c.position)
    .limit(bindparam("limit"))
)


def events_past(
    conn: Connection, task_id: str, after: int, limit: int
) -> tuple[list[TaskEvent], bool]:
    """The task's events past position `after`, at most `limit`, and whether more remain."""
    rows = conn.execute(_EVENTS_PAST, {"task_id": task_id, "after": after, "limit": limit + 1})
    events = [event_from_row(row) for row in rows]
    return events[:limit], len(events) > limit


def list_tasks(
    conn: Connection,
    status: TaskStatus | None,
    assignee: str | None,
    after: str | None,
    limit: int,
) -> list[Task]:
    query = select(_t)
    if status is not None:
        query = query.where(_t.c.status == status.value)
    if assignee is not None:
        query = query.where(_t.c.assignee == assignee)
    if after is not None:
        query = query.where(_t.c.id > after)
    return [task_from_row(row) for row in conn.execute(query.order_by(_t.c.id).limit(limit))]


class SqlTaskRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def create(
        self,
        *,
        title: str,
        body: str,
        assignee: str | None,
        external: ExternalRef | None,
        actor: Actor,
    ) -> tuple[Task, TaskEvent]:
        return await self._writer.run(CreateTask(title, body, assignee, external, actor))

    async def update(
        self, task_id: TaskId, change: TaskChange, actor: Actor
    ) -> tuple[Task, TaskEvent | None]:
        """Apply the change; no event when it changes nothing."""
        return await self._writer.run(UpdateTask(task_id, change, actor))

    async def comment(self, task_id: TaskId, text: str, actor: Actor) -> TaskEvent:
        return await self._writer.run(CommentOnTask(task_id, text, actor))

    async def get(self, task_id: str) -> tuple[Task, list[TaskEvent]]:
        return await self._reads.transact(lambda c: task_with_events(c, task_id))

    async def events(
        self, task_id: str, *, after: int = 0, limit: int = 50
    ) -> tuple[Task, list[TaskEvent], bool]:
        """The task and a page of its events after `seq` `after`, in one snapshot; whether
        more remain."""
        return await self._reads.transact(lambda c: task_events_page(c, task_id, after, limit))

    async def list(
        self,
        *,
        status: TaskStatus | None = None,
        assignee: str | None = None,
        after: str | None = None,
        limit: int = 50,
    ) -> list[Task]:
        return await self._reads.transact(lambda c: list_tasks(c, status, assignee, after, limit))
