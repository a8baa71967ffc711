"""The one writer: every write is a command, and commands commit in batches (group commit).

A request hands its command to the writer and awaits the result. The writer takes whatever
commands are waiting (up to `max_batch`), runs them in one transaction, commits once, and only
then answers each caller and nudges the bus. So:

- What a caller was told is committed: the answer is sent after the commit.
- After the commit, `on_commit` gets the timeline events and the task events the batch appended.
- Positions (`core.storage.positions`): on SQLite the counter row is updated inside the
  transaction, so positions are handed out in commit order. On PostgreSQL they come from
  sequences, and each batch holds this writer's advisory lock from its first statement to its
  end, which is what lets readers of every replica read only up to what no open batch can still
  go below — without committers queueing on one row.
- Each command is carried out in two phases, its check then its write (`core.storage.batch`):
  the check reads and refuses, the write stages and writes. A refusal raised by a write is a
  bug, logged as one; its command still fails alone, as below.
- A failing command fails alone, and leaves nothing behind. A batch is first run the quick way:
  every command is carried out, then one flush writes what they staged. If any command raises —
  a domain error (`RolecallError`), anything else, or the flush itself (a value a driver cannot
  encode, a constraint raced by another replica) — that transaction is rolled back whole and the
  batch is redone the careful way, still as one transaction with one commit: each command in a
  savepoint of its own, carried out and flushed there, the savepoint rolled back if it raises.
  So the command that raised gets its error, every other command commits, and nothing of the
  failed one remains (on SQLite a rolled-back savepoint gives its positions back; on PostgreSQL
  they stay a gap, which readers pass over). The quick way is the common one and costs nothing
  extra; the careful way costs a savepoint and a flush per command, only for batches that need
  it. If it is the COMMIT that is refused (a deferred constraint), each command is retried alone.
- What a caller is told after the commit (its command's finisher) is computed per command: one
  that raises answers its own caller only, and never undoes or redoes the commit.
- Thread rows are locked up front in id order (`SELECT … FOR UPDATE` on PostgreSQL; SQLite's
  `BEGIN IMMEDIATE` locks the whole file), so batches from several replicas cannot deadlock.
- Traces (`core.tracing`): a command sent from inside a trace is a `rolecall.commit` span of
  its caller's; a batch with any such command (sampled) is a `rolecall.write_batch` span linked
  to them, and each event it committed is remembered with the commit span of the command that
  appended it, before the listeners hear of it.

The unit of work (the batch, the command protocol) is `core.storage.batch`; its statements are
`core.storage.batch_sql`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from opentelemetry.trace import Span
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from core import tracing
from core.model.errors import RolecallError
from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent
from core.storage import positions
from core.storage.batch import Batch, Command, Raced
from core.storage.errors import StorageUnavailable
from core.storage.positions import PgWriter
from core.storage.rows import to_micros
from core.storage.transact import Transactor

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(slots=True)
class _Pending:
    command: Command[Any, Any]
    future: asyncio.Future[Any]
    span: Span | None = None
    """The command's `rolecall.commit` span, sent from inside a trace."""


class Writer:
    def __init__(
        self,
        transactor: Transactor,
        *,
        clock: Callable[[], datetime],
        on_commit: Callable[[Sequence[AnyEvent], Sequence[TaskEvent]], None],
        max_batch: int = 256,
        multi_writer: bool = False,
    ) -> None:
        """`multi_writer` (PostgreSQL): positions come from the streams' sequences, this writer
        registered in `stream_writers` before its first batch (`core.storage.positions`)."""
        self._transactor = transactor
        self._multi_writer = multi_writer
        self._registered: PgWriter | None = None
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

    async def run(self, command: Command[Any, T]) -> T:
        if self._task is None or self._task.done():
            raise RuntimeError("the writer is not running")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with tracing.commit_span(command) as span:
            self._queue.put_nowait(_Pending(command, future, span))
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
        traced = [one.span for one in pending if one.span is not None]
        if not any(span.is_recording() for span in traced):  # none traced, or none sampled
            await self._commit_batch(pending)
            return
        batch = tracing.write_batch(traced, size=len(pending))
        try:
            await self._commit_batch(pending)
        finally:
            batch.end()

    async def _writer(self, now: int) -> PgWriter | None:
        """This writer's registration (PostgreSQL), made and committed before its first batch."""
        if not self._multi_writer:
            return None
        if self._registered is None:
            self._registered = await self._transactor.transact(
                lambda c: positions.register_writer(c, now)
            )
        return self._registered

    async def _commit_batch(self, pending: list[_Pending]) -> None:
        commands = [one.command for one in pending]
        now = to_micros(self._clock())
        writer = await self._writer(now)
        try:
            done = await self._transactor.transact(lambda c: _apply(c, commands, now, writer))
        except positions.WriterGone:
            self._registered = None  # registered again for the next batch
            raise
        except _Raised as raised:  # rolled back whole: redo it the careful way
            if len(pending) == 1:
                _log_failure(raised.error)
                _answer(pending[0].future, _told(raised.error))
                return
            if not isinstance(raised.error, RolecallError | Raced):
                log.warning(
                    "a command of a batch of %d raised %s; redoing the batch with a savepoint "
                    "per command",
                    len(pending),
                    type(raised.error).__name__,
                )
            try:
                done = await self._transactor.transact(
                    lambda c: _apply_each(c, commands, now, writer)
                )
            except DBAPIError:
                await self._one_by_one(pending)
                return
        except DBAPIError:  # the COMMIT was refused (or the connection lost)
            if len(pending) == 1:
                raise
            await self._one_by_one(pending)
            return
        outcomes, batches, shares = done
        for one, outcome in zip(pending, outcomes, strict=True):
            _answer(one.future, outcome if isinstance(outcome, Exception) else _finish(outcome))
        events: list[AnyEvent] = []
        task_events: list[TaskEvent] = []
        for batch in batches:
            events += batch.committed
            task_events += batch.task_events
        if tracing.on():
            tracing.committed([one.span for one in pending], shares, events, task_events)
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
"""A command's finisher (what answers its caller once committed), or what its caller is told
it raised."""
Done = tuple[list[Outcome], list[Batch], list[tuple[int, int]]]
"""Per command, in order, its outcome; the batches that wrote (the quick way's one, or the
careful way's, one per command that did not raise); and per command, in order, how many
timeline and task events it appended (none for one that raised)."""


class _Raised(Exception):
    """A command (or the flush) raised in the quick way: its transaction is rolled back."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _RefusedAfterWriting(Exception):
    """A command's `write` raised a domain error: a bug, its refusal belonged in `check`."""

    def __init__(self, error: RolecallError) -> None:
        super().__init__(str(error))
        self.error = error


def _carry_out(command: Command[Any, Any], batch: Batch) -> Callable[[], Any]:
    """One command in the batch: its check (read-only), then its write."""
    plan = command.check(batch.view)
    try:
        return command.write(batch, plan)
    except RolecallError as error:
        raise _RefusedAfterWriting(error) from error


def _appended(batch: Batch, before: tuple[int, int]) -> tuple[int, int]:
    """The timeline and task events staged in `batch` since it held `before` of them."""
    return len(batch.staged) - before[0], len(batch.task_events) - before[1]


def _apply(
    connection: Connection, commands: list[Command[Any, Any]], now: int, writer: PgWriter | None
) -> Done:
    """The quick way: every command is carried out in one batch, then one flush writes it all.
    Any exception (a refusal included: the commands before it have written) rolls it all back,
    as `_Raised` — but a writer found gone fails the batch as it is. (The writer's lock is
    taken with the batch's first positions.)"""
    batch = Batch(connection, now, writer)
    try:
        batch.load([tid for command in commands for tid in command.thread_ids])
        batch.load_runs([rid for command in commands for rid in command.run_ids])
        finishers: list[Outcome] = []
        shares: list[tuple[int, int]] = []
        for command in commands:
            before = len(batch.staged), len(batch.task_events)
            finishers.append(_carry_out(command, batch))
            shares.append(_appended(batch, before))
        batch.flush()
    except positions.WriterGone:
        raise
    except Exception as error:
        raise _Raised(error) from error
    return finishers, [batch], shares


def _apply_each(
    connection: Connection, commands: list[Command[Any, Any]], now: int, writer: PgWriter | None
) -> Done:
    """The careful way: each command carried out and flushed in a savepoint of its own, with a
    batch of its own (which reads the thread and run rows as the commands before it left them).
    The writer's lock is taken before any savepoint, so that none can give it back early."""
    if writer is not None:
        positions.open_batch(connection, writer)
    # Every thread is locked first, in id order, as the quick way does (so replicas cannot
    # deadlock); each in a savepoint, so an id the driver refuses fails only its command.
    locks = Batch(connection, now, writer)
    for thread_id in sorted({tid for command in commands for tid in command.thread_ids}):
        with contextlib.suppress(Exception), connection.begin_nested():
            locks.load([thread_id])
    outcomes: list[Outcome] = []
    batches: list[Batch] = []
    shares: list[tuple[int, int]] = []
    for command in commands:
        batch = Batch(connection, now, writer)
        try:
            with connection.begin_nested():
                batch.load(command.thread_ids)
                batch.load_runs(command.run_ids)
                finisher = _carry_out(command, batch)
                batch.flush()
        except positions.WriterGone:
            raise
        except Exception as error:
            _log_failure(error)
            outcomes.append(_told(error))
            shares.append((0, 0))
        else:
            outcomes.append(finisher)
            batches.append(batch)
            shares.append(_appended(batch, (0, 0)))
    return outcomes, batches, shares


def _told(error: Exception) -> Exception:
    """What the caller of a command that raised `error` is told: the domain error itself."""
    if isinstance(error, _RefusedAfterWriting | Raced):
        return error.error
    return error


def _finish(finisher: Callable[[], Any]) -> Any:
    """What answers the caller: its finisher's value, or what the finisher raised."""
    try:
        return finisher()
    except Exception as error:  # the write stands; only this caller hears of it
        log.exception("a committed command's answer failed")
        return error


def _log_failure(error: Exception) -> None:
    """A refusal by a check is the caller's to hear, and so is a race lost; a refusal after
    writing is a bug in that command; anything else is a bug, or a value storage refused that
    an edge should have refused first."""
    if isinstance(error, RolecallError):
        return
    if isinstance(error, Raced):
        log.info("a command lost a race with another writer: %s", error.error)
    elif isinstance(error, _RefusedAfterWriting):
        log.error("a command refused after writing: checks belong in check", exc_info=error.error)
    else:
        log.error("a write command failed", exc_info=error)


def _answer(future: asyncio.Future[Any], answer: Any) -> None:
    if future.done():  # the caller went away; the write stands
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)
