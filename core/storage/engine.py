"""Creating SQLAlchemy async engines for SQLite (aiosqlite) and PostgreSQL (asyncpg).

PostgreSQL's engines check a pooled connection with one round trip before using it
(`_check_on_checkout`) and bound the waits on the server (`CONNECT_TIMEOUT`, `POOL_TIMEOUT`;
the storage's own engines `COMMAND_TIMEOUT` too), so a restarted server is reconnected to and
an unreachable one is reported quickly (`core.storage.errors`).

SQLite runs in WAL mode (readers never block the writer) with `synchronous=FULL`, so a commit
that was acknowledged survives a crash of the machine, not just of the process. A writer's
transactions on SQLite begin with `BEGIN IMMEDIATE`: it takes the write lock up front instead of
failing half-way when another process writes; `busy_timeout` makes contenders wait, not fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError, InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from core.storage.transact import outage


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def dialect_of(connection: Connection) -> Any:
    """The dialect module (`sqlalchemy.dialects.postgresql` or `.sqlite`) whose `insert` has
    `on_conflict_do_nothing` / `on_conflict_do_update`, for this connection's backend."""
    return postgresql if connection.dialect.name == "postgresql" else sqlite


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

# PostgreSQL engines, for when the server restarts or goes away (see `core.storage.errors`): a
# connection is checked before the pool hands it out, so one the server closed (a restart closes
# them all) is replaced, not used; and every wait is bounded, so a request answers 503 in
# seconds rather than hanging on a server that does not answer.
CONNECT_TIMEOUT = 5.0
"""Seconds to open a connection (asyncpg's default is a minute)."""
COMMAND_TIMEOUT = 15.0
"""Seconds one statement may take; the serving statements take milliseconds."""
POOL_TIMEOUT = 5.0
"""Seconds to wait for a pooled connection to come free (SQLAlchemy's default is 30)."""
CHECK_TIMEOUT = 5.0
"""Seconds the check of a pooled connection may take before it counts as lost."""


_FRESH = "rolecall.fresh"


async def _check(driver: Any) -> None:
    # No arguments: asyncpg sends it in the simple query protocol, one round trip.
    await driver.execute("SELECT 1", timeout=CHECK_TIMEOUT)


def _check_on_checkout(sync_engine: Engine) -> None:
    """Check a pooled PostgreSQL connection before the pool hands it out, with one round trip:
    `SELECT 1` in the simple query protocol. (SQLAlchemy's `pool_pre_ping` costs three
    on asyncpg — a BEGIN, the statement and a ROLLBACK — before every unit of work.) A
    connection the server closed fails the check; the pool then replaces every connection it
    opened before this one (a restart closed them all) and hands out a fresh one; a connection
    that fails the check otherwise is replaced alone. A connection opened for this very
    checkout is not checked."""

    @event.listens_for(sync_engine, "connect")
    def _on_connect(_dbapi_connection: Any, record: Any) -> None:
        record.info[_FRESH] = True

    @event.listens_for(sync_engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.pop(_FRESH, False):
            return
        try:
            dbapi_connection.run_async(_check)
        except Exception as error:
            # No work was sent on it yet: whatever failed the check, the connection is
            # replaced. (A backend terminated while its connection was idle leaves asyncpg's
            # protocol refusing the next query with an `InternalClientError`, not an outage.)
            reason = outage(error)
            if reason is None:
                raise DisconnectionError(f"the connection failed its check: {error}") from error
            raise InvalidatePoolError(reason) from error


def _sqlite_file(url: str) -> None:
    database = make_url(url).database or ""
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)


def create_engine(
    url: str, *, pool_size: int = 5, writer: bool = False, serving: bool = False
) -> AsyncEngine:
    """An async engine: PostgreSQL's readers (REPEATABLE READ) and writer (READ COMMITTED), and
    the migrations on either backend. SQLite's own readers and writer use
    `create_sqlite_sync_engine` in threads of their own (see `core.storage.transact`).

    On PostgreSQL a connection is checked before the pool hands it out, is opened within
    `CONNECT_TIMEOUT` or not at all, and is waited for `POOL_TIMEOUT` at most. `serving`: the
    engines of a running gateway's storage, whose every statement is also bounded
    (`COMMAND_TIMEOUT`); a migration's statements are not. A serving pool never opens more than
    `pool_size` connections: under a burst a reader waits for one to come free rather than open
    one more for a single read and close it after (each is a server process on PostgreSQL, so
    that churn cost more than the reads themselves)."""
    if not is_sqlite(url):
        isolation = "READ COMMITTED" if writer else "REPEATABLE READ"
        connect: dict[str, Any] = {"timeout": CONNECT_TIMEOUT}
        if serving:
            connect["command_timeout"] = COMMAND_TIMEOUT
        engine = create_async_engine(
            url,
            pool_size=pool_size,
            max_overflow=0 if serving else pool_size,
            isolation_level=isolation,
            pool_timeout=POOL_TIMEOUT,
            connect_args=connect,
        )
        _check_on_checkout(engine.sync_engine)
        return engine
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
