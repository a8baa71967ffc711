"""Creating SQLAlchemy async engines for SQLite (aiosqlite) and PostgreSQL (asyncpg).

SQLite runs in WAL mode (readers never block the writer) with `synchronous=FULL`, so a commit
that was acknowledged survives a crash of the machine, not just of the process. A writer's
transactions on SQLite begin with `BEGIN IMMEDIATE`: it takes the write lock up front instead of
failing half-way when another process writes; `busy_timeout` makes contenders wait, not fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _prepare_sqlite(sync_engine: Engine, *, writer: bool) -> None:
    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let us, not the driver, decide how transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in PRAGMAS:
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")


PRAGMAS = ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=10000")


def _sqlite_file(url: str) -> None:
    database = make_url(url).database or ""
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)


def create_engine(url: str, *, pool_size: int = 5, writer: bool = False) -> AsyncEngine:
    """An async engine: PostgreSQL's readers (REPEATABLE READ) and writer (READ COMMITTED), and
    the migrations on either backend. SQLite's own readers and writer use
    `create_sqlite_sync_engine` in threads of their own (see `core.storage.transact`)."""
    if not is_sqlite(url):
        isolation = "READ COMMITTED" if writer else "REPEATABLE READ"
        return create_async_engine(
            url, pool_size=pool_size, max_overflow=pool_size, isolation_level=isolation
        )
    _sqlite_file(url)
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)
    _prepare_sqlite(engine.sync_engine, writer=writer)
    return engine


def create_sqlite_sync_engine(url: str, *, pool_size: int = 1, writer: bool = False) -> Engine:
    """A synchronous engine (stdlib sqlite3) for threads of our own: the writer's, or readers'."""
    _sqlite_file(url)
    sync_url = make_url(url).set(drivername="sqlite+pysqlite")
    engine = create_sync_engine(
        sync_url,
        pool_size=pool_size,
        max_overflow=0,
        connect_args={"check_same_thread": False},
    )
    _prepare_sqlite(engine, writer=writer)
    return engine
