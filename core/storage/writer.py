"""The one writer: every write is a command, and commands commit in batches (group commit).

A request hands its command to the writer and awaits the result. The writer takes whatever
commands are waiting (up to `max_batch`), runs them in one transaction, commits once, and only
then answers each caller and nudges the bus. So:

- What a caller was told is committed: the answer is sent after the commit.
- After the commit, `on_commit` gets the timeline events and the task events the batch appended.
- Positions are handed out in commit order. The position counter row is updated inside the
  transaction, which serialises committers (across processes too, on PostgreSQL), so no reader
  ever sees position N+1 while N is still uncommitted.
- A failing command fails alone, and leaves nothing behind. A batch is first run the quick way:
  every command applies, then one flush writes what they staged. If any command raises — a
  domain error (`RolecallError`), anything else, or the flush itself (a value a driver cannot
  encode, a constraint raced by another replica) — that transaction is rolled back whole and the
  batch is redone the careful way, still as one transaction with one commit: each command in a
  savepoint of its own, applied and flushed there, the savepoint rolled back if it raises. So
  the command that raised gets its error, every other command commits, nothing of the failed
  one remains, and positions have no gaps (a rolled-back savepoint gives its positions back
  before anyone can read them). The quick way is the common one and costs nothing extra; the
  careful way costs a savepoint and a flush per command, only for batches that need it. If it is
  the COMMIT that is refused (a deferred constraint), each command is retried alone.
- What a caller is told after the commit (its command's finisher) is computed per command: one
  that raises answers its own caller only, and never undoes or redoes the commit.
- Thread rows are locked up front in id order (`SELECT … FOR UPDATE` on PostgreSQL; SQLite's
  `BEGIN IMMEDIATE` locks the whole file), so batches from several replicas cannot deadlock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Table, bindparam, select, update
from sqlalchemy.exc import DBAPIError

from core.model.errors import NotFound, RolecallError
from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address
from core.model.tasks import TaskEvent
from core.model.threads import Thread
from core.model.timeline import (
    AnyEvent,
    EventId,
    Message,
    Retraction,
    StateChange,
    SystemNote,
    ThreadId,
)
from core.storage import schema
from core.storage.errors import StorageUnavailable
from core.storage.ids import new_id
from core.storage.rows import EVENT_COLUMNS, event_values, from_micros, to_micros
from core.storage.statements import DriverStatement
from core.storage.transact import Transactor

log = logging.getLogger(__name__)

T = TypeVar("T", covariant=True)


@dataclass(slots=True)
class ThreadState:
    """A thread as one batch sees and changes it, under the thread row's lock."""

    id: ThreadId
    created_at: int
    thread_only: bool
    last_seq: int
    last_at: int
    states: dict[Address, ParticipantState]
    changed_states: set[Address] = field(default_factory=set)
    touched: bool = False
    policy_changed: bool = False

    def snapshot(self) -> Thread:
        return Thread(
            id=self.id,
            participants=tuple(sorted(self.states.items())),
            memory_policy=MemoryPolicy(thread_only=self.thread_only),
            created_at=from_micros(self.created_at),
        )


@dataclass(slots=True)
class RunState:
    """A run's row as one batch sees and changes it (its thread is locked: see run_commands)."""

    id: str
    cursor: int
    task_cursor: int
    status: str
    failures: int
    last_error: str | None
    last_turn: int
    changed: bool = False

    def to_params(self, now: int) -> tuple[Any, ...]:
        """The row of `_UPDATE_RUNS`."""
        return (
            self.cursor,
            self.task_cursor,
            self.status,
            self.failures,
            self.last_error,
            self.last_turn,
            now,
            self.id,
        )


EventType = type[Message] | type[StateChange] | type[Retraction] | type[SystemNote]


class Command(Protocol[T]):
    """A write. `apply` validates, then stages; it returns what answers the caller after commit."""

    @property
    def thread_ids(self) -> Sequence[ThreadId]: ...

    def apply(self, batch: Batch) -> Callable[[], T]: ...


class Batch:
    """One transaction's unit of work: thread states under lock, and the events staged so far."""

    def __init__(self, connection: Connection, now: int) -> None:
        self.connection = connection
        self.now = now
        self.threads: dict[ThreadId, ThreadState] = {}
        self.staged: list[tuple[EventType, dict[str, Any], ThreadId, int, int]] = []
        self.committed: list[AnyEvent] = []
        self.retracted: set[str] = set()
        self.runs: dict[str, RunState] = {}
        self.task_events: list[TaskEvent] = []
        """Task events this batch appended (for the after-commit listeners)."""
        self.rows_after: dict[tuple[Table, tuple[str, ...]], list[Callable[[], tuple[Any, ...]]]]
        self.rows_after = {}
        """Rows to insert once the staged events have their ids (one executemany per table and
        columns)."""

    def load(self, thread_ids: Sequence[ThreadId]) -> None:
        wanted = sorted(set(thread_ids) - set(self.threads))
        if not wanted:
            return
        rows: list[Any] = []
        for start in range(0, len(wanted), _LOAD_MOST):
            ids = wanted[start : start + _LOAD_MOST]
            # Padded to a power of two with the last id again, so few sizes are ever compiled.
            size = 1 << (len(ids) - 1).bit_length()
            ids += ids[-1:] * (size - len(ids))
            rows += _load_threads(size).rows(self.connection, tuple(ids))
        for thread_id, created_at, thread_only, last_seq, last_at, address, state in rows:
            thread = self.threads.get(thread_id)
            if thread is None:
                thread = self.threads[thread_id] = ThreadState(
                    id=thread_id,
                    created_at=created_at,
                    thread_only=bool(thread_only),  # the driver's own value: 0 or 1 on SQLite
                    last_seq=last_seq,
                    last_at=last_at,
                    states={},
                )
            thread.states[address] = _STATES[state]

    def load_runs(self, run_ids: Sequence[str]) -> None:
        """Read the rows of these runs (one query); a command's threads are locked first."""
        wanted = sorted(set(run_ids) - set(self.runs))
        for start in range(0, len(wanted), _LOAD_MOST):
            ids = wanted[start : start + _LOAD_MOST]
            size = 1 << (len(ids) - 1).bit_length()  # padded as in `load`
            ids += ids[-1:] * (size - len(ids))
            for row in _load_runs(size).rows(self.connection, tuple(ids)):
                run_id, cursor, task_cursor, status, failures, error, turn = row
                if run_id not in self.runs:
                    self.runs[run_id] = RunState(
                        run_id, cursor, task_cursor, status, failures, error, turn
                    )

    def run(self, run_id: str) -> RunState:
        self.load_runs([run_id])
        state = self.runs.get(run_id)
        if state is None:
            raise NotFound(f"no run with id {run_id!r}", code="run_not_found")
        return state

    def thread(self, thread_id: ThreadId) -> ThreadState:
        state = self.threads.get(thread_id)
        if state is None:
            raise NotFound(f"no thread with id {thread_id!r}", code="thread_not_found")
        return state

    def stage(self, thread: ThreadState, kind: EventType, **fields: Any) -> int:
        """Stage the thread's next event of this kind; it is built with its id, `seq`, `at` and
        `position` once the batch knows its positions. Returns its index in `committed`."""
        thread.last_seq += 1
        # `at` never goes backwards within a thread, so (at, seq) order is seq order.
        thread.last_at = max(self.now, thread.last_at)
        thread.touched = True
        self.staged.append((kind, fields, thread.id, thread.last_seq, thread.last_at))
        return len(self.staged) - 1

    def flush(self) -> None:
        """Write what was staged: positions from the counter, events, thread and member rows."""
        if self.staged:
            count = len(self.staged)
            end = _ADVANCE.scalar(self.connection, (count,))
            position = end - count
            committed: list[AnyEvent] = []
            for kind, fields, thread_id, seq, at in self.staged:
                position += 1
                committed.append(
                    kind(
                        id=EventId(new_id()),
                        thread_id=thread_id,
                        seq=seq,
                        position=position,
                        at=from_micros(at),
                        **fields,
                    )
                )
            self.committed = committed
            _INSERT_EVENTS.execute(self.connection, [event_values(e) for e in committed])
        threads = self.threads.values()
        if touched := [t for t in threads if t.touched]:
            _ADVANCE_THREADS.execute(
                self.connection, [(t.last_seq, t.last_at, t.id) for t in touched]
            )
        if policies := [t for t in threads if t.policy_changed]:
            self.connection.execute(
                _SET_POLICY, [{"b_id": t.id, "b_thread_only": t.thread_only} for t in policies]
            )
        if changed := [(t.id, a, t.states[a]) for t in threads for a in t.changed_states]:
            self.connection.execute(
                _SET_STATES,
                [{"b_id": i, "b_address": a, "b_state": s.value} for i, a, s in changed],
            )
        if runs := [r.to_params(self.now) for r in self.runs.values() if r.changed]:
            _UPDATE_RUNS.execute(self.connection, runs)
        for (table, columns), rows in self.rows_after.items():
            _insert_into(table, columns).execute(self.connection, [row() for row in rows])

    def insert_after_flush(
        self, table: Table, columns: tuple[str, ...], row: Callable[[], tuple[Any, ...]]
    ) -> None:
        """Insert `row()` (its values in `columns` order) into `table` once the staged events
        exist (it may refer to them); one executemany per table and columns."""
        self.rows_after.setdefault((table, columns), []).append(row)


# The statements of a batch, built once.
_t, _p, _counter = schema.threads, schema.thread_participants, schema.stream_positions
_LOAD_MOST = 256


@functools.cache
def _load_threads(size: int) -> DriverStatement:
    """The rows of `size` threads, one per member, locked, in id order (ids may repeat)."""
    ids = [bindparam(f"id_{j}", type_=_t.c.id.type) for j in range(size)]
    statement = (
        select(
            _t.c.id,
            _t.c.created_at,
            _t.c.memory_thread_only,
            _t.c.last_seq,
            _t.c.last_at,
            _p.c.address,
            _p.c.state,
        )
        .join(_p, _p.c.thread_id == _t.c.id)
        .where(_t.c.id.in_(ids))
        .order_by(_t.c.id)
        .with_for_update(of=_t)
    )
    return DriverStatement(statement, [f"id_{j}" for j in range(size)])


_STATES = {state.value: state for state in ParticipantState}
_ADVANCE = DriverStatement(
    update(_counter)
    .where(_counter.c.stream == schema.EVENTS_STREAM)
    .values(value=_counter.c.value + bindparam("n", type_=_counter.c.value.type))
    .returning(_counter.c.value),
    ["n"],
)
_INSERT_EVENTS = DriverStatement(
    schema.events.insert().values({c: bindparam(f"e_{c}") for c in EVENT_COLUMNS}),
    [f"e_{c}" for c in EVENT_COLUMNS],
)
_ADVANCE_THREADS = DriverStatement(
    update(_t)
    .where(_t.c.id == bindparam("b_id"))
    .values(last_seq=bindparam("b_seq"), last_at=bindparam("b_at")),
    ["b_seq", "b_at", "b_id"],
)
_SET_POLICY = (
    update(_t)
    .where(_t.c.id == bindparam("b_id"))
    .values(memory_thread_only=bindparam("b_thread_only"))
)
_r = schema.runs


@functools.cache
def _load_runs(size: int) -> DriverStatement:
    """The rows of `size` runs, in `RunState`'s field order (ids may repeat)."""
    ids = [bindparam(f"id_{j}", type_=_r.c.id.type) for j in range(size)]
    statement = select(
        _r.c.id,
        _r.c.cursor,
        _r.c.task_cursor,
        _r.c.status,
        _r.c.failures,
        _r.c.last_error,
        _r.c.last_turn,
    ).where(_r.c.id.in_(ids))
    return DriverStatement(statement, [f"id_{j}" for j in range(size)])


_UPDATE_RUNS = DriverStatement(
    update(_r)
    .where(_r.c.id == bindparam("b_id"))
    .values(
        cursor=bindparam("b_cursor"),
        task_cursor=bindparam("b_task_cursor"),
        status=bindparam("b_status"),
        failures=bindparam("b_failures"),
        last_error=bindparam("b_last_error"),
        last_turn=bindparam("b_last_turn"),
        updated_at=bindparam("b_now"),
    ),
    [
        "b_cursor",
        "b_task_cursor",
        "b_status",
        "b_failures",
        "b_last_error",
        "b_last_turn",
        "b_now",
        "b_id",
    ],
)
_SET_STATES = (
    update(_p)
    .where(_p.c.thread_id == bindparam("b_id"), _p.c.address == bindparam("b_address"))
    .values(state=bindparam("b_state"))
)


@functools.cache
def _insert_into(table: Table, columns: tuple[str, ...]) -> DriverStatement:
    """INSERT INTO table (columns…), built once."""
    statement = table.insert().values(
        {c: bindparam(f"v_{c}", type_=table.c[c].type) for c in columns}
    )
    return DriverStatement(statement, [f"v_{c}" for c in columns])


@dataclass(slots=True)
class _Pending:
    command: Command[Any]
    future: asyncio.Future[Any]


class Writer:
    def __init__(
        self,
        transactor: Transactor,
        *,
        clock: Callable[[], datetime],
        on_commit: Callable[[Sequence[AnyEvent], Sequence[TaskEvent]], None],
        max_batch: int = 256,
    ) -> None:
        self._transactor = transactor
        self._clock = clock
        self._on_commit = on_commit
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="rolecall-writer")

    async def stop(self) -> None:
        """Finish what is queued, then stop."""
        if self._task is None:
            return
        await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def run(self, command: Command[T]) -> T:
        if self._task is None or self._task.done():
            raise RuntimeError("the writer is not running")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(command, future))
        return await future

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            await asyncio.sleep(0)  # let requests that are ready join this batch
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._commit(batch)
            except StorageUnavailable as exc:  # an outage: every batch fails alike for a while
                log.warning("write batch of %d not stored: %s", len(batch), exc)
                for pending in batch:
                    _answer(pending.future, exc)
            except Exception as exc:  # the writer must outlive any one batch
                log.exception("write batch failed")
                for pending in batch:
                    _answer(pending.future, exc)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _commit(self, pending: list[_Pending]) -> None:
        commands = [one.command for one in pending]
        now = to_micros(self._clock())
        try:
            done = await self._transactor.transact(lambda c: _apply(c, commands, now))
        except _Raised as raised:  # rolled back whole: redo it the careful way
            if len(pending) == 1:
                _log_failure(raised.error)
                _answer(pending[0].future, raised.error)
                return
            if not isinstance(raised.error, RolecallError):
                log.warning(
                    "a command of a batch of %d raised %s; redoing the batch with a savepoint "
                    "per command",
                    len(pending),
                    type(raised.error).__name__,
                )
            try:
                done = await self._transactor.transact(lambda c: _apply_each(c, commands, now))
            except DBAPIError:
                await self._one_by_one(pending)
                return
        except DBAPIError:  # the COMMIT was refused (or the connection lost)
            if len(pending) == 1:
                raise
            await self._one_by_one(pending)
            return
        outcomes, batches = done
        for one, outcome in zip(pending, outcomes, strict=True):
            _answer(one.future, outcome if isinstance(outcome, Exception) else _finish(outcome))
        events: list[AnyEvent] = []
        task_events: list[TaskEvent] = []
        for batch in batches:
            events += batch.committed
            task_events += batch.task_events
        if events or task_events:
            self._on_commit(events, task_events)

    async def _one_by_one(self, pending: list[_Pending]) -> None:
        log.warning("batch of %d refused by the database; retrying one by one", len(pending))
        for one in pending:
            try:
                await self._commit([one])
            except Exception as single:
                _answer(one.future, single)


Outcome = Callable[[], Any] | Exception
"""A command's finisher (what answers its caller once committed), or what it raised."""
Done = tuple[list[Outcome], list["Batch"]]
"""Per command, in order, its outcome; and the batches that wrote (the quick way's one, or the
careful way's, one per command that did not raise)."""


class _Raised(Exception):
    """A command (or the flush) raised in the quick way: its transaction is rolled back."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _apply(connection: Connection, commands: list[Command[Any]], now: int) -> Done:
    """The quick way: every command applies to one batch, then one flush writes it all. Any
    exception (a domain error included: the command may have written before it raised) rolls
    it all back, as `_Raised`."""
    batch = Batch(connection, now)
    try:
        batch.load([tid for command in commands for tid in command.thread_ids])
        batch.load_runs([rid for command in commands for rid in getattr(command, "run_ids", ())])
        finishers: list[Outcome] = [command.apply(batch) for command in commands]
        batch.flush()
    except Exception as error:
        raise _Raised(error) from error
    return finishers, [batch]


def _apply_each(connection: Connection, commands: list[Command[Any]], now: int) -> Done:
    """The careful way: each command applied and flushed in a savepoint of its own, with a batch
    of its own (which reads the thread and run rows as the commands before it left them)."""
    # Every thread is locked first, in id order, as the quick way does (so replicas cannot
    # deadlock); each in a savepoint, so an id the driver refuses fails only its command.
    locks = Batch(connection, now)
    for thread_id in sorted({tid for command in commands for tid in command.thread_ids}):
        with contextlib.suppress(Exception), connection.begin_nested():
            locks.load([thread_id])
    outcomes: list[Outcome] = []
    batches: list[Batch] = []
    for command in commands:
        batch = Batch(connection, now)
        try:
            with connection.begin_nested():
                batch.load(command.thread_ids)
                batch.load_runs(getattr(command, "run_ids", ()))
                finisher = command.apply(batch)
                batch.flush()
        except Exception as error:
            _log_failure(error)
            outcomes.append(error)
        else:
            outcomes.append(finisher)
            batches.append(batch)
    return outcomes, batches


def _finish(finisher: Callable[[], Any]) -> Any:
    """What answers the caller: its finisher's value, or what the finisher raised."""
    try:
        return finisher()
    except Exception as error:  # the write stands; only this caller hears of it
        log.exception("a committed command's answer failed")
        return error


def _log_failure(error: Exception) -> None:
    """A domain error is the caller's to hear; anything else is a bug, or a value storage
    refused that an edge should have refused first."""
    if not isinstance(error, RolecallError):
        log.error("a write command failed", exc_info=error)


def _answer(future: asyncio.Future[Any], answer: Any) -> None:
    if future.done():  # the caller went away; the write stands
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)
