"""Running a synchronous unit of work in one database transaction, from async code.

The writer's batch logic is plain synchronous SQLAlchemy over a `Connection`; how it reaches the
database depends on the backend:

- SQLite, reads: in dedicated threads, on the stdlib `sqlite3` driver. A whole read is one hop to
  such a thread instead of one hop per statement and per fetch. A read its caller knows to be
  brief (`transact_brief`: a bounded page, by an index) runs on the event loop instead, where it
  costs less than the hop it would take: the reads of every turn and of the committed-event
  stream are such reads.
- SQLite, writes: the writer's statements run on the event loop itself and only the COMMIT (the
  fsync, which releases the GIL) goes to the writer's own thread. The statements of a batch are
  in-memory work of well under a millisecond that holds the GIL wherever it runs; in a thread of
  their own they only added a hop and a tug-of-war for the GIL with the loop at every statement.
- The loop never waits on a lock: its connections have no busy timeout, and work that finds the
  database locked (another process writing, for the writer; WAL recovery, for a reader) runs in
  a thread instead, which waits as long as `busy_timeout` allows.
- PostgreSQL: on an asyncpg connection, through SQLAlchemy's `run_sync` (the statements await
  the driver underneath; the loop stays free). Work of one statement (`transact_single`) runs
  in autocommit: the statement is its own transaction, without the round trips of a BEGIN and
  a COMMIT around it. A unit of work that fails for a reason of the
  server's (it is restarting, the connection was lost, no connection is left: `outage`) raises
  `StorageUnavailable` (`core.storage.errors`), whatever the driver called it; nothing is
  retried here, so nothing is ever written twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

import asyncpg
from sqlalchemy import Connection, Engine, RootTransaction
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine

from core.storage.errors import StorageUnavailable

R = TypeVar("R")


class Transactor(Protocol):
    async def transact(self, work: Callable[[Connection], R]) -> R:
        """Run `work` inside one transaction; commit if it returns, roll back if it raises."""
        ...

    async def transact_brief(self, work: Callable[[Connection], R]) -> R:
        """`transact`, for work known to be brief (a bounded page by an index): where the
        backend allows, it runs right here on the event loop."""
        ...

    async def transact_single(self, work: Callable[[Connection], R]) -> R:
        """`transact_brief`, for work that reads in one statement, or in several that need no
        snapshot in common: on PostgreSQL each statement is then a transaction of its own
        (autocommit), without a BEGIN and a COMMIT around it."""
        ...

    @property
    def autocommits(self) -> bool:
        """Whether `transact_single` runs its statements outside a transaction (PostgreSQL)."""
        ...

    async def close(self) -> None: ...


class ThreadTransactor:
    """SQLite: a synchronous engine used only from its own threads (one, for the writer).

    Each thread keeps one connection open for good, so a unit of work costs a BEGIN and a COMMIT,
    not a pool checkout, a reset and a return as well.
    """

    def __init__(self, engine: Engine, *, threads: int = 1, name: str = "rolecall-db") -> None:
        self._engine = engine
        self._thread = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self._local = threading.local()
        self._connections: list[Connection] = []
        self._lock = threading.Lock()
        self._on_loop: Connection | None = None

    def _loop_connection(self) -> Connection:
        """The event loop's own connection, which never waits for a lock."""
        connection = self._on_loop
        if connection is None or connection.closed or connection.invalidated:
            connection = self._on_loop = self._engine.connect()
            # Straight to the driver: no SQLAlchemy transaction begins.
            driver = connection.connection.driver_connection
            assert driver is not None
            driver.execute("PRAGMA busy_timeout=0")
            with self._lock:
                self._connections.append(connection)
        return connection

    def _connection(self) -> Connection:
        connection: Connection | None = getattr(self._local, "connection", None)
        if connection is None or connection.closed or connection.invalidated:
            connection = self._local.connection = self._engine.connect()
            with self._lock:
                self._connections.append(connection)
        return connection

    def _run(self, work: Callable[[Connection], R]) -> R:
        transaction = self._connection().begin()
        try:
            result = work(transaction.connection)
        except BaseException:
            transaction.rollback()
            raise
        _commit(transaction)
        return result

    async def transact(self, work: Callable[[Connection], R]) -> R:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._run, work)

    async def transact_brief(self, work: Callable[[Connection], R]) -> R:
        transaction = self._loop_connection().begin()
        try:
            result = work(transaction.connection)
        except OperationalError as error:
            transaction.rollback()
            if not _is_locked(error):
                raise
            return await self.transact(work)  # wait for the lock off the loop
        except BaseException:
            transaction.rollback()
            raise
        _commit(transaction)
        return result

    async def transact_single(self, work: Callable[[Connection], R]) -> R:
        return await self.transact_brief(work)

    @property
    def autocommits(self) -> bool:
        return False

    def _dispose(self) -> None:
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._engine.dispose()

    async def close(self) -> None:
        # Work still running in the threads (a read whose caller was cancelled) finishes first:
        # a connection must never be closed while another thread is using it.
        await asyncio.to_thread(self._thread.shutdown, wait=True)
        self._dispose()


class SqliteWriteTransactor(ThreadTransactor):
    """SQLite's writer: statements on the loop, the COMMIT in the writer's thread (see above).

    One transaction at a time: the writer runs its batches one after another, and a transaction
    only begins once the previous COMMIT has returned.
    """

    def __init__(self, engine: Engine, *, name: str = "rolecall-writer") -> None:
        super().__init__(engine, threads=1, name=name)
        self._committing: asyncio.Future[None] | None = None

    async def transact(self, work: Callable[[Connection], R]) -> R:
        if self._committing is not None:  # its caller went away before it ended; wait for it
            await asyncio.wait([self._committing])  # (its outcome was that caller's)
        connection = self._loop_connection()
        try:
            transaction = connection.begin()
        except OperationalError as error:
            if not _is_locked(error):
                raise
            # Another process holds the write lock: wait for it off the loop.
            return await super().transact(work)
        try:
            result = work(connection)
        except BaseException:
            transaction.rollback()
            raise
        self._committing = asyncio.get_running_loop().run_in_executor(
            self._thread, _commit, transaction
        )
        try:
            await asyncio.shield(self._committing)
        finally:
            if self._committing.done():
                self._committing = None
        return result

    async def close(self) -> None:
        if self._committing is not None:
            await asyncio.gather(self._committing, return_exceptions=True)
        await super().close()

    async def transact_brief(self, work: Callable[[Connection], R]) -> R:
        return await self.transact(work)


def _commit(transaction: RootTransaction) -> None:
    try:
        transaction.commit()
    except BaseException:
        # A refused COMMIT (a deferred constraint, a full disk) leaves SQLite's transaction
        # open, and SQLAlchemy's rollback of a failed commit does not reach the driver.
        transaction.rollback()
        driver = transaction.connection.connection.driver_connection
        if driver is not None and driver.in_transaction:
            driver.rollback()
        raise


def _is_locked(error: OperationalError) -> bool:
    return "database is locked" in str(error.orig)


class AsyncTransactor:
    """PostgreSQL: an async engine; the work runs through `run_sync`.

    A failure for a reason of the server's (see `outage`) is raised as `StorageUnavailable`;
    the pool checks a connection before it hands it out (`core.storage.engine`), so once the
    server is back, the next unit of work runs on a fresh connection.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._autocommits = engine.dialect.name == "postgresql"

    async def transact(self, work: Callable[[Connection], R]) -> R:
        with _outages():
            async with self._engine.begin() as connection:
                return await connection.run_sync(work)

    async def transact_brief(self, work: Callable[[Connection], R]) -> R:
        return await self.transact(work)

    async def transact_single(self, work: Callable[[Connection], R]) -> R:
        if not self.autocommits:
            return await self.transact(work)
        with _outages():
            async with self._engine.connect() as connection:
                # Setting it costs no round trip: the driver's adapter only starts no
                # transaction; the pool sets the connection back when it is returned.
                await connection.execution_options(isolation_level="AUTOCOMMIT")
                return await connection.run_sync(work)

    @property
    def autocommits(self) -> bool:
        return self._autocommits

    async def close(self) -> None:
        await self._engine.dispose()


@contextlib.contextmanager
def _outages() -> Iterator[None]:
    """Raise a failure for a reason of the server's (`outage`) as `StorageUnavailable`."""
    try:
        yield
    except Exception as error:
        reason = outage(error)
        if reason is None:
            raise
        raise StorageUnavailable(reason) from error


# SQLSTATEs of failures that are the server's, not the work's: every connection exception
# (class 08), the server shutting down or starting up (57P01-57P03), no connection slot left.
_OUTAGE_STATES = {
    "57P01": "the database server is shutting down",
    "57P02": "the database server is recovering from a crash",
    "57P03": "the database server is starting up or shutting down",
    "53300": "the database server has no connection left to give",
}


def outage(error: BaseException) -> str | None:
    """Why `error` means the database cannot be reached for now, or None when it is a failure
    of the work itself (a constraint, a bad value, a bug). The driver's error is looked for
    along the chain of causes: SQLAlchemy wraps asyncpg's, which may wrap an `OSError`."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        state = getattr(link, "sqlstate", None)
        if isinstance(state, str):
            if state.startswith("08"):
                return "the connection to the database was lost"
            if state in _OUTAGE_STATES:
                return _OUTAGE_STATES[state]
        if isinstance(link, TimeoutError):
            return "the database did not answer in time"
        if isinstance(link, OSError):
            return f"the database cannot be reached ({link.strerror or type(link).__name__})"
        if isinstance(link, PoolTimeout):
            return "no connection to the database came free in time"
        if _closed_connection(link):
            return "the connection to the database was lost"
        if link.__cause__ is not None:
            link = link.__cause__
        else:  # a context raised `from None` was deliberately put aside: so is it here
            link = None if link.__suppress_context__ else link.__context__
    return None


def _closed_connection(error: BaseException) -> bool:
    """asyncpg's word for work tried on a connection that was already closed, by the server or
    after an earlier failure (it has no SQLSTATE: the server never saw the work). asyncpg has
    no class of its own for it, only this message."""
    return isinstance(error, asyncpg.InterfaceError) and "connection is closed" in str(error)
