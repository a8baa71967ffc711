"""Creating SQLAlchemy async engines for SQLite (aiosqlite) and PostgreSQL (asyncpg).

SQLite runs in WAL mode (readers never block the writer) with `synchronous=FULL`, so a commit
that was acknowledged survives a crash of the machine, not just of the process. A writer's
transactions on SQLite begin with `BEGIN IMMEDIATE`: it takes the write lock up front instead of
failing half-way when another process writes; `busy_timeout` makes contenders wait, not fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def create_engine(url: str, *, pool_size: int = 5, writer: bool = False) -> AsyncEngine:
    """An engine for reads, or (`writer=True`) for the one connection that commits writes."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_async_engine(url, pool_size=pool_size, max_overflow=pool_size)
    database = parsed.database or ""
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let us, not the driver, decide how transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "journal_mode=WAL",
            "synchronous=FULL",
            "foreign_keys=ON",
            "busy_timeout=10000",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")

    return engine
