"""Running a synchronous unit of work in one database transaction, from async code.

The writer's batch logic is plain synchronous SQLAlchemy over a `Connection`; how it reaches the
database depends on the backend:

- SQLite: in dedicated threads (one for the writer, a few for reads), on the stdlib `sqlite3`
  driver. A whole batch, or a whole read, is one hop to such a thread instead of one hop per
  statement and per fetch.
- PostgreSQL: on an asyncpg connection, through SQLAlchemy's `run_sync` (the statements await
  the driver underneath; the loop stays free).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine

R = TypeVar("R")


class Transactor(Protocol):
    async def transact(self, work: Callable[[Connection], R]) -> R:
        """Run `work` inside one transaction; commit if it returns, roll back if it raises."""
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

    def _connection(self) -> Connection:
        connection: Connection | None = getattr(self._local, "connection", None)
        if connection is None or connection.closed or connection.invalidated:
            connection = self._local.connection = self._engine.connect()
            with self._lock:
                self._connections.append(connection)
        return connection

    def _run(self, work: Callable[[Connection], R]) -> R:
        connection = self._connection()
        with connection.begin():
            return work(connection)

    async def transact(self, work: Callable[[Connection], R]) -> R:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._run, work)

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


class AsyncTransactor:
    """PostgreSQL: an async engine; the work runs through `run_sync`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def transact(self, work: Callable[[Connection], R]) -> R:
        async with self._engine.begin() as connection:
            return await connection.run_sync(work)

    async def close(self) -> None:
        await self._engine.dispose()
