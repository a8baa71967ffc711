"""Subscriptions: conversation runs watching tasks, and the task news each run has not seen.

A subscription remembers the task-event position at which it began (`since`): what happened to
the task before is not news to the run. A run's task news is every event of the tasks it
subscribes to past its `task_cursor` and past the subscription's `since`, except the events the
run made itself (a conversation is not woken by what its own agent did — but is by the same role
working from another run).

A run may also watch an external item (`github:owner/repo#123`) that no task refers to yet: it
waits in `external_subscriptions`, and the transaction that creates the item's task (a webhook's
first delivery about it, or the tasks API) turns every such wait into a subscription whose
`since` lies just before the task's creation — so the creation itself is news to the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, func, insert, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from core.model.errors import NotFound
from core.model.runs.run import Run, RunId
from core.model.tasks import ExternalRef, Task, TaskEvent, TaskId
from core.model.timeline import ThreadId, rfc3339
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.positions import committed
from core.storage.rows import from_micros
from core.storage.tasks_store import event_from_row, lock_external, task_by_external, task_from_row
from core.storage.transact import Transactor
from core.storage.writer import Writer

_s, _e, _t, _r = schema.subscriptions, schema.task_events, schema.tasks, schema.runs
_x = schema.external_subscriptions


class _OfRun:
    """A command about one run, whose row the batch reads with the others'."""

    __slots__ = ()
    run_id: RunId

    @property
    def run_ids(self) -> Sequence[str]:
        return (self.run_id,)


@dataclass(frozen=True, slots=True)
class Subscribe(_OfRun):
    """Watch the task: its news begins after task-event position `since`."""

    run_id: RunId
    task_id: TaskId
    since: int
    """The task events' committed head, read before the batch (`SqlSubscriptionRepository`)."""
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> bool:
        """Whether the subscription is new."""
        batch.run(self.run_id)  # NotFound for an unknown run
        if batch.connection.execute(select(_t.c.id).where(_t.c.id == self.task_id)).first() is None:
            raise NotFound(f"no task with id {self.task_id!r}", code="task_not_found")
        key = and_(_s.c.run_id == self.run_id, _s.c.task_id == self.task_id)
        return batch.connection.execute(select(_s.c.run_id).where(key)).first() is None

    def write(self, batch: Batch, plan: bool) -> Callable[[], bool]:
        if not plan:
            return lambda: False
        batch.connection.execute(
            insert(_s).values(
                run_id=self.run_id, task_id=self.task_id, since=self.since, created_at=batch.now
            )
        )
        return lambda: True


@dataclass(frozen=True, slots=True)
class Unsubscribe(NoRuns):
    run_id: RunId
    task_id: TaskId
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        gone = batch.connection.execute(
            delete(_s).where(_s.c.run_id == self.run_id, _s.c.task_id == self.task_id)
        ).rowcount
        return lambda: gone == 1


@dataclass(frozen=True, slots=True)
class SubscribeByKey(_OfRun):
    """Watch an external item by its key: its task, when one refers to it; otherwise wait for
    it (`external_subscriptions`): the task's creation turns the wait into a subscription.
    Answers (the task's id or None, whether this is new)."""

    run_id: RunId
    ref: ExternalRef
    since: int
    """As `Subscribe.since`, when a task refers to the item."""
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[Subscribe, bool] | None:
        """The subscription to the item's task and its check's plan; None: no task yet."""
        batch.run(self.run_id)  # NotFound for an unknown run
        lock_external(batch.connection, self.ref)
        task = task_by_external(batch.connection, self.ref)
        if task is None:
            return None
        subscribe = Subscribe(self.run_id, task.id, self.since)
        return subscribe, subscribe.check(batch)

    def write(
        self, batch: Batch, plan: tuple[Subscribe, bool] | None
    ) -> Callable[[], tuple[TaskId | None, bool]]:
        if plan is not None:
            subscribe, new = plan
            added = subscribe.write(batch, new)()
            return lambda: (subscribe.task_id, added)
        inserted = batch.connection.execute(
            _dialect(batch.connection)
            .insert(_x)
            .values(
                run_id=self.run_id,
                ext_source=self.ref.source,
                ext_key=self.ref.key,
                created_at=batch.now,
            )
            .on_conflict_do_nothing(index_elements=["run_id", "ext_source", "ext_key"])
        ).rowcount
        return lambda: (None, inserted == 1)


@dataclass(frozen=True, slots=True)
class UnsubscribeByKey(NoRuns):
    """Stop watching an external item: its task's subscription, or the wait for it. Answers
    (the task's id or None, whether the run watched it)."""

    run_id: RunId
    ref: ExternalRef
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> Task | None:
        return task_by_external(batch.connection, self.ref)

    def write(self, batch: Batch, plan: Task | None) -> Callable[[], tuple[TaskId | None, bool]]:
        waited = batch.connection.execute(
            delete(_x).where(
                _x.c.run_id == self.run_id,
                _x.c.ext_source == self.ref.source,
                _x.c.ext_key == self.ref.key,
            )
        ).rowcount
        if plan is None:
            return lambda: (None, waited == 1)
        task_id = plan.id
        watched = Unsubscribe(self.run_id, task_id).write(batch, None)()
        return lambda: (task_id, watched or waited == 1)


def _dialect(connection: Connection):  # type: ignore[no-untyped-def]
    return postgresql if connection.dialect.name == "postgresql" else sqlite


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskNews:
    """A run's task news: `(task, event)` pairs in position order, and the position read up to
    (events the run made itself included), where its task cursor may go."""

    news: Sequence[tuple[Task, TaskEvent]]
    read_to: int
    more: bool


_TASK_COLUMNS = [c.label(f"tk_{c.name}") for c in _t.c]
_NEWS = (
    select(_e, *_TASK_COLUMNS)
    .join(_s, and_(_s.c.task_id == _e.c.task_id, _s.c.run_id == bindparam("run_id")))
    .join(_t, _t.c.id == _e.c.task_id)
    .where(
        _e.c.position > bindparam("after"),
        _e.c.position <= bindparam("upto"),
        _e.c.position > _s.c.since,
    )
    .order_by(_e.c.position)
    .limit(bindparam("limit"))
)


def task_news(conn: Connection, run: Run, limit: int, upto: int) -> TaskNews:
    """The run's task news after its task cursor, up to `upto` (the task events' committed
    head, `core.storage.positions`: its cursor may then move to what it read)."""
    params = {"run_id": run.id, "after": run.task_cursor, "upto": upto, "limit": limit + 1}
    rows = conn.execute(_NEWS, params).all()
    read = rows[:limit]
    pairs = [(_task(row), event_from_row(row)) for row in read]
    return TaskNews(
        news=[(task, event) for task, event in pairs if event.actor.run_id != run.id],
        read_to=read[-1].position if read else run.task_cursor,
        more=len(rows) > limit,
    )


def _task(row: Any) -> Task:
    """The task of a news row, from its `tk_…` columns."""
    return task_from_row(SimpleNamespace(**{c.name: row._mapping[f"tk_{c.name}"] for c in _t.c}))


Watcher = tuple[RunId, ThreadId, str]
"""A watching run: its id, its thread, its role."""


def subscribers(conn: Connection, task_id: TaskId) -> list[Watcher]:
    query = (
        select(_r.c.id, _r.c.thread_id, _r.c.role)
        .join(_s, _s.c.run_id == _r.c.id)
        .where(_s.c.task_id == task_id, _r.c.thread_id.is_not(None))
    )
    return [(RunId(r.id), ThreadId(r.thread_id), r.role) for r in conn.execute(query)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscriber:
    """A conversation's run watching a task, as operators see it: since which task-event
    position its news begins, and when it subscribed."""

    run_id: RunId
    thread_id: ThreadId
    role: str
    since: int
    subscribed_at: int

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "role": self.role,
            "since": self.since,
            "subscribed_at": rfc3339(from_micros(self.subscribed_at)),
        }


def subscribers_page(
    conn: Connection, task_id: str, after: str | None, limit: int
) -> tuple[list[Subscriber], bool]:
    """The runs watching the task, by run id after `after`, at most `limit`, and whether more
    remain; `NotFound` for an unknown task."""
    if conn.execute(select(_t.c.id).where(_t.c.id == task_id)).first() is None:
        raise NotFound(f"no task with id {task_id!r}", code="task_not_found")
    query = (
        select(_r.c.id, _r.c.thread_id, _r.c.role, _s.c.since, _s.c.created_at)
        .join(_s, _s.c.run_id == _r.c.id)
        .where(_s.c.task_id == task_id, _r.c.thread_id.is_not(None))
    )
    if after is not None:
        query = query.where(_r.c.id > after)
    rows = conn.execute(query.order_by(_r.c.id).limit(limit + 1)).all()
    found = [
        Subscriber(
            run_id=RunId(r.id),
            thread_id=ThreadId(r.thread_id),
            role=r.role,
            since=r.since,
            subscribed_at=r.created_at,
        )
        for r in rows[:limit]
    ]
    return found, len(rows) > limit


def subscriber_counts(conn: Connection, task_ids: Sequence[str]) -> dict[str, int]:
    """How many conversations watch each of the tasks (a task nobody watches: absent)."""
    if not task_ids:
        return {}
    query = (
        select(_s.c.task_id, func.count())
        .join(_r, _r.c.id == _s.c.run_id)
        .where(_s.c.task_id.in_(list(task_ids)), _r.c.thread_id.is_not(None))
        .group_by(_s.c.task_id)
    )
    return {str(task_id): int(n) for task_id, n in conn.execute(query)}


def routes(conn: Connection, task_id: TaskId) -> tuple[list[Watcher], str | None]:
    """Whom an event of the task concerns, in one snapshot: the runs watching it, and the role
    it is assigned to (None: nobody)."""
    assignee = conn.execute(select(_t.c.assignee).where(_t.c.id == task_id)).scalar()
    return subscribers(conn, task_id), assignee


def subscribed_tasks(conn: Connection, run_id: RunId) -> list[Task]:
    query = (
        select(_t)
        .join(_s, _s.c.task_id == _t.c.id)
        .where(_s.c.run_id == run_id)
        .order_by(_s.c.created_at, _t.c.id)
    )
    return [task_from_row(row) for row in conn.execute(query)]


def subscriptions_of(conn: Connection, run_id: RunId) -> list[TaskId]:
    query = select(_s.c.task_id).where(_s.c.run_id == run_id).order_by(_s.c.created_at)
    return [TaskId(i) for i in conn.execute(query).scalars()]


def awaited_by(conn: Connection, run_id: RunId) -> list[ExternalRef]:
    """The external items the run waits for: subscribed by key, no task refers to them yet."""
    query = (
        select(_x.c.ext_source, _x.c.ext_key)
        .where(_x.c.run_id == run_id)
        .order_by(_x.c.created_at, _x.c.ext_source, _x.c.ext_key)
    )
    return [ExternalRef(source=r.ext_source, key=r.ext_key) for r in conn.execute(query)]


def runs_with_task_news(conn: Connection) -> list[tuple[ThreadId, str]]:
    """(thread, role) of every conversation run with task news past its task cursor."""
    query = (
        select(_r.c.thread_id, _r.c.role)
        .distinct()
        .join(_s, _s.c.run_id == _r.c.id)
        .join(_e, _e.c.task_id == _s.c.task_id)
        .where(
            _r.c.thread_id.is_not(None),
            _e.c.position > _r.c.task_cursor,
            _e.c.position > _s.c.since,
            or_(_e.c.run_id.is_(None), _e.c.run_id != _r.c.id),
        )
    )
    return [(ThreadId(row.thread_id), row.role) for row in conn.execute(query)]


class SqlSubscriptionRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def subscribe(self, run_id: RunId, task_id: TaskId) -> bool:
        """Watch the task from now on; False when the run already did."""
        return await self._writer.run(Subscribe(run_id, task_id, await self._since()))

    async def _since(self) -> int:
        """Where a subscription made now begins: the task events' committed head. On
        PostgreSQL, where another replica may be committing a task event below the positions
        handed out, it may make news of an event committed moments before the subscription —
        never pass over one committed after it."""
        return (await committed(self._reads)).tasks

    async def unsubscribe(self, run_id: RunId, task_id: TaskId) -> bool:
        """Stop watching; False when the run did not."""
        return await self._writer.run(Unsubscribe(run_id, task_id))

    async def subscribe_by_key(self, run_id: RunId, ref: ExternalRef) -> tuple[TaskId | None, bool]:
        """Watch the external item: (its task, or None while no task refers to it; whether
        this is new)."""
        return await self._writer.run(SubscribeByKey(run_id, ref, await self._since()))

    async def unsubscribe_by_key(
        self, run_id: RunId, ref: ExternalRef
    ) -> tuple[TaskId | None, bool]:
        """Stop watching the external item: (its task or None; whether the run watched it)."""
        return await self._writer.run(UnsubscribeByKey(run_id, ref))

    async def of_run_with_waits(self, run_id: RunId) -> tuple[list[Task], list[ExternalRef]]:
        """The tasks the run watches and the external items it waits for, in one read."""
        return await self._reads.transact(
            lambda c: (subscribed_tasks(c, run_id), awaited_by(c, run_id))
        )

    async def routes(self, task_id: TaskId) -> tuple[list[Watcher], str | None]:
        """The runs watching the task and its assignee role, in one read."""
        return await self._reads.transact(lambda c: routes(c, task_id))

    async def subscribers(
        self, task_id: str, *, after: str | None = None, limit: int = 50
    ) -> tuple[list[Subscriber], bool]:
        """A page of the runs watching the task, by run id, and whether more remain."""
        return await self._reads.transact(lambda c: subscribers_page(c, task_id, after, limit))

    async def counts(self, task_ids: Sequence[str]) -> dict[str, int]:
        """How many conversations watch each task."""
        return await self._reads.transact(lambda c: subscriber_counts(c, task_ids))

    async def of_run(self, run_id: RunId) -> list[TaskId]:
        return await self._reads.transact(lambda c: subscriptions_of(c, run_id))

    async def runs_with_news(self) -> list[tuple[ThreadId, str]]:
        return await self._reads.transact(runs_with_task_news)
