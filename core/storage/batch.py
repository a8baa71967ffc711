"""The unit of work of the writer: one batch of commands, and what a command is.

A **command** is one write, in two phases the writer calls one after the other, per command:

- `check(view)` runs the rules and raises the domain errors (`RolecallError`). It sees the batch
  read-only (`BatchView`): thread and run states as the commands before it left them, and a
  connection that runs SELECTs only (anything else raises `WriteInCheck`). What it found out it
  returns as its **plan**.
- `write(batch, plan)` stages events, updates states and runs its statements, and returns its
  *finisher*, what answers its caller once the batch committed. Every refusal belongs in
  `check`: a domain error raised here is a bug (the writer logs it; the command still fails
  alone). The one refusal a write may make is `Raced`: a statement found that another replica
  got there first since the check looked (a key inserted meanwhile), which no check could see.

A command names the thread rows (`thread_ids`) and run rows (`run_ids`) it will use, so the
writer reads them for the whole batch at once, threads locked in id order.

A **batch** holds, for one transaction, the states of the threads and runs its commands use and
the events they staged; its `flush` writes them (`core.storage.batch_sql`): positions from the
counter, events, thread, member and run rows, the rows numbered by a stream of their own (audit
records), then the rows commands asked for after the flush.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, TypeVarTuple, overload

from sqlalchemy import Connection, CursorResult, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Executable
from sqlalchemy.sql.elements import TextClause
from sqlalchemy.sql.selectable import CompoundSelect, Select, TextualSelect, TypedReturnsRows

from core.model.approvals import Resolution
from core.model.errors import NotFound, RolecallError
from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address
from core.model.tasks import TaskEvent
from core.model.threads import Thread
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    EventId,
    Message,
    Retraction,
    StateChange,
    SystemNote,
    ThreadId,
)
from core.storage import batch_sql, positions, schema
from core.storage.ids import new_id
from core.storage.positions import PgWriter
from core.storage.rows import event_values, from_micros

P = TypeVar("P")
T = TypeVar("T", covariant=True)
_Ts = TypeVarTuple("_Ts")


class WriteInCheck(TypeError):
    """A command's check tried to write: a programming error, never the caller's."""


class Raced(Exception):
    """A write found that another replica changed what its check read (a row inserted since):
    the command is refused with `error`, as its check would have refused it a moment later."""

    def __init__(self, error: RolecallError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(slots=True)
class ThreadState:
    """A thread as one batch sees and changes it, under the thread row's lock."""

    id: ThreadId
    created_at: int
    thread_only: bool
    last_seq: int
    last_at: int
    states: dict[Address, ParticipantState]
    erased: set[Address] = field(default_factory=set)
    """Members who are erased persons: they write nothing more."""
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


class ThreadReading(Protocol):
    """A `ThreadState` as a check sees it: read-only."""

    @property
    def id(self) -> ThreadId: ...
    @property
    def thread_only(self) -> bool: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def states(self) -> dict[Address, ParticipantState]: ...
    @property
    def erased(self) -> set[Address]: ...
    def snapshot(self) -> Thread: ...


@dataclass(slots=True)
class RunState:
    """A run's row as one batch sees and changes it (its thread is locked: see runs_commands)."""

    id: str
    cursor: int
    task_cursor: int
    status: str
    failures: int
    last_error: str | None
    last_turn: int
    lease_holder: str | None = None
    lease_fence: int | None = None
    """The run's lease as the batch read it (None: no lease row)."""
    changed: bool = False

    def to_params(self, now: int) -> tuple[Any, ...]:
        """The row of `batch_sql.update_runs`."""
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


class RunReading(Protocol):
    """A `RunState` as a check sees it: read-only."""

    @property
    def id(self) -> str: ...
    @property
    def cursor(self) -> int: ...
    @property
    def task_cursor(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def failures(self) -> int: ...
    @property
    def last_turn(self) -> int: ...
    @property
    def lease_holder(self) -> str | None: ...
    @property
    def lease_fence(self) -> int | None: ...


EventType = (
    type[Message]
    | type[StateChange]
    | type[Retraction]
    | type[SystemNote]
    | type[ApprovalRequested]
    | type[ApprovalResolved]
    | type[Erased]
)


class Command(Protocol[P, T]):
    """A write: `check` (read-only) gives a plan, `write` carries it out and returns what answers
    the caller after commit."""

    @property
    def thread_ids(self) -> Sequence[ThreadId]: ...

    @property
    def run_ids(self) -> Sequence[str]: ...

    def check(self, batch: BatchView) -> P: ...

    def write(self, batch: Batch, plan: P) -> Callable[[], T]: ...


class NoRuns:
    """For a command that uses no run rows: `run_ids` is empty."""

    __slots__ = ()

    @property
    def run_ids(self) -> Sequence[str]:
        return ()


Params = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
"""A statement's parameters, as `Connection.execute` takes them (one row or many)."""


class ReadOnlyConnection:
    """The batch's connection as a check sees it: it runs SELECTs (locking ones included) and
    refuses every other statement with `WriteInCheck`."""

    __slots__ = ("_connection",)

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    @property
    def dialect(self) -> Dialect:
        return self._connection.dialect

    @overload
    def execute(
        self,
        statement: TypedReturnsRows[*_Ts],
        parameters: Params = None,
    ) -> CursorResult[*_Ts]: ...

    @overload
    def execute(
        self, statement: Executable, parameters: Params = None
    ) -> CursorResult[*tuple[Any, ...]]: ...

    def execute(
        self, statement: Executable, parameters: Params = None
    ) -> CursorResult[*tuple[Any, ...]]:
        if not _reads_only(statement):
            raise WriteInCheck(
                f"a check ran {type(statement).__name__}: checks read, writes belong in write"
            )
        return self._connection.execute(statement, parameters)


Reads = Connection | ReadOnlyConnection
"""What a read helper runs on: the batch's connection in `write`, the check's in `check`."""


def _reads_only(statement: Executable) -> bool:
    if isinstance(statement, Select | CompoundSelect | TextualSelect):
        return True
    return isinstance(statement, TextClause) and statement.text.lstrip()[:6].upper() == "SELECT"


class Batch:
    """One transaction's unit of work: thread states under lock, and the events staged so far."""

    def __init__(self, connection: Connection, now: int, writer: PgWriter | None = None) -> None:
        self.connection = connection
        self.now = now
        self.writer = writer
        """PostgreSQL: the writer whose batch this is (positions come from the sequences)."""
        self.threads: dict[ThreadId, ThreadState] = {}
        self.staged: list[tuple[EventType, dict[str, Any], ThreadId, int, int]] = []
        self.committed: list[AnyEvent] = []
        self.retracted: set[str] = set()
        self.resolved: dict[str, Resolution] = {}
        """Approvals a command of this batch resolved, and how."""
        self.runs: dict[str, RunState] = {}
        self.task_events: list[TaskEvent] = []
        """Task events this batch appended (for the after-commit listeners)."""
        self.rows_after: dict[tuple[Table, tuple[str, ...]], list[Callable[[], tuple[Any, ...]]]]
        self.rows_after = {}
        """Rows to insert once the staged events have their ids (one executemany per table and
        columns)."""
        self.positioned: dict[tuple[str, Table, tuple[str, ...]], list[tuple[Any, ...]]] = {}
        """Rows to insert at the flush with positions of a stream (`insert_positioned`)."""
        self._positions: dict[tuple[str, Table, tuple[str, ...]], list[int]] = {}
        self.view = BatchView(self)
        """What the commands' checks see of this batch."""

    def load(self, thread_ids: Sequence[ThreadId]) -> None:
        """Read and lock the rows of these threads (in id order), unless this batch has them."""
        wanted = sorted(set(thread_ids) - set(self.threads))
        if not wanted:
            return
        rows = batch_sql.thread_rows(self.connection, wanted)
        for thread_id, created_at, thread_only, last_seq, last_at, address, state, erased in rows:
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
            if erased:
                thread.erased.add(address)

    def load_runs(self, run_ids: Sequence[str]) -> None:
        """Read the rows of these runs (one query); a command's threads are locked first."""
        wanted = sorted(set(run_ids) - set(self.runs))
        if not wanted:
            return
        for row in batch_sql.run_rows(self.connection, wanted):
            run_id, cursor, task_cursor, status, failures, error, turn, holder, fence = row
            if run_id not in self.runs:
                self.runs[run_id] = RunState(
                    run_id, cursor, task_cursor, status, failures, error, turn, holder, fence
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

    def take_positions(self, stream: str, count: int) -> list[int]:
        """`count` new positions of `stream` (`core.storage.positions`)."""
        return positions.take(self.connection, stream, count, self.writer, self.now)

    def flush(self) -> None:
        """Write what was staged: positions for the events, the events, thread and member rows."""
        connection = self.connection
        if self.staged:
            taken = self.take_positions(schema.EVENTS_STREAM, len(self.staged))
            committed: list[AnyEvent] = []
            for (kind, fields, thread_id, seq, at), position in zip(
                self.staged, taken, strict=True
            ):
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
            batch_sql.insert_events(connection, [event_values(e) for e in committed])
        threads = self.threads.values()
        if touched := [(t.last_seq, t.last_at, t.id) for t in threads if t.touched]:
            batch_sql.advance_threads(connection, touched)
        if policies := [(t.id, t.thread_only) for t in threads if t.policy_changed]:
            batch_sql.set_policies(connection, policies)
        if changed := [(t.id, a, t.states[a].value) for t in threads for a in t.changed_states]:
            batch_sql.set_states(connection, changed)
        if runs := [r.to_params(self.now) for r in self.runs.values() if r.changed]:
            batch_sql.update_runs(connection, runs)
        for key, values in self.positioned.items():
            stream, table, columns = key
            taken = self._positions[key] = self.take_positions(stream, len(values))
            rows = [(p, *row) for p, row in zip(taken, values, strict=True)]
            batch_sql.insert_rows(connection, table, ("position", *columns), rows)
        for (table, columns), after in self.rows_after.items():
            batch_sql.insert_rows(connection, table, columns, [row() for row in after])

    def insert_after_flush(
        self, table: Table, columns: tuple[str, ...], row: Callable[[], tuple[Any, ...]]
    ) -> None:
        """Insert `row()` (its values in `columns` order) into `table` once the staged events
        exist (it may refer to them); one executemany per table and columns."""
        self.rows_after.setdefault((table, columns), []).append(row)

    def insert_positioned(
        self, stream: str, table: Table, columns: tuple[str, ...], row: tuple[Any, ...]
    ) -> Callable[[], int]:
        """Insert `row` (its values in `columns` order) into `table` at the flush, its
        `position` column the next of `stream`'s: the batch takes the positions of all such rows
        of a table at once and inserts them with one executemany, so a batch of many records
        costs two statements, not two a record. Returns what gives the row's position once the
        batch flushed."""
        key = (stream, table, columns)
        values = self.positioned.setdefault(key, [])
        values.append(row)
        index = len(values) - 1
        return lambda: self._positions[key][index]


class BatchView:
    """A batch as a command's check sees it: its thread and run states read-only, its
    connection for SELECTs only, no staging."""

    __slots__ = ("_batch", "_threads", "connection", "now")

    def __init__(self, batch: Batch) -> None:
        self._batch = batch
        self._threads = batch.threads
        self.connection = ReadOnlyConnection(batch.connection)
        self.now = batch.now

    def thread(self, thread_id: ThreadId) -> ThreadReading:
        """The thread's state (`thread_not_found` when the batch has not loaded it)."""
        state = self._threads.get(thread_id)
        if state is None:
            return self._batch.thread(thread_id)  # raises NotFound
        return state

    def run(self, run_id: str) -> RunReading:
        """The run's state (`run_not_found` for an unknown run)."""
        return self._batch.run(run_id)

    def retracted_here(self, event_id: str) -> bool:
        """Whether a command before this one in the batch retracted the message."""
        return event_id in self._batch.retracted

    def resolved_here(self, approval_id: str) -> Resolution | None:
        """How a command before this one in the batch resolved the approval, if one did."""
        return self._batch.resolved.get(approval_id)


_STATES = {state.value: state for state in ParticipantState}
