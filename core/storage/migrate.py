"""Upgrading the schema with Alembic, on SQLite and PostgreSQL alike.

On PostgreSQL several processes may upgrade the same database at the same moment (replicas
started together, `rolecall db upgrade` beside a starting `rolecall serve`). Alembic does
nothing to serialise them: two would each find the schema missing and create the same tables,
and one would fail on a catalogue constraint. So an upgrade on PostgreSQL first takes the
session-level advisory lock `MIGRATION_LOCK` on the connection it migrates on, and releases it
once its transaction has committed: a concurrent upgrader waits for the lock, then reads the
revision the first one committed (READ COMMITTED) and finds nothing, or only what is newer, to
do. When the process dies holding the lock, its session ends and the server releases the lock.

SQLite needs no lock: the migration's transaction begins with `BEGIN IMMEDIATE`, which already
makes a second writer wait (`core.storage.engine`).

An upgrade says what it did in one line at info level — `database created at 0020`, `database
upgraded from 0012 to 0020` or `database at 0020, up to date` — with the database (its password
hidden) and both revisions in the record's `fields`; Alembic's line per revision is for debugging
(`gateway.logs` leaves it out otherwise).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, make_url, text
from sqlalchemy.ext.asyncio import AsyncConnection

from core.storage.engine import create_engine

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"

MIGRATION_LOCK = (0x526F6C65, 0x63616C6C)
"""The advisory lock key every upgrader of a PostgreSQL database takes: the bytes of "Role" and
"call" as the two-integer key. The two-integer keys are a key space apart from the one-bigint
keys, which the storage's transaction-scoped locks hash names into (`core.storage.tasks_store`),
so no other lock can be this one."""

_LOCK = text("SELECT pg_advisory_lock(:classid, :objid)")
_UNLOCK = text("SELECT pg_advisory_unlock(:classid, :objid)")
_KEY = {"classid": MIGRATION_LOCK[0], "objid": MIGRATION_LOCK[1]}


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def newest_revision() -> str:
    """The newest schema revision this version of the gateway knows."""
    return ScriptDirectory.from_config(_config()).get_current_head() or "base"


async def current_revision(url: str) -> str | None:
    """The schema revision of the database at `url` (None: it has no schema yet), read without
    changing it (`rolecall doctor`)."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_revision)
    finally:
        await engine.dispose()


def _revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def _upgrade(connection: Connection) -> tuple[str | None, str]:
    """The revision before (None: no schema yet) and after upgrading to the newest."""
    before = _revision(connection)
    command.upgrade(_config(connection), "head")
    return before, _revision(connection) or "base"


def _said(before: str | None, after: str) -> str:
    """The one line an upgrade from `before` to `after` is logged as."""
    if before is None:
        return f"database created at {after}"
    if before == after:
        return f"database at {after}, up to date"
    return f"database upgraded from {before} to {after}"


@asynccontextmanager
async def _one_upgrader_at_a_time(connection: AsyncConnection) -> AsyncIterator[None]:
    """Hold `MIGRATION_LOCK` on PostgreSQL for the block; nothing on SQLite."""
    if connection.dialect.name != "postgresql":
        yield
        return
    # The lock is the session's, so it outlives this transaction; waiting for it is unbounded
    # (a migration's statements are: see `create_engine`), as long as the holder's upgrade.
    async with connection.begin():
        await connection.execute(_LOCK, _KEY)
    try:
        yield
    finally:
        # A connection that was lost has no session left to unlock: the server released it.
        if not connection.invalidated:
            async with connection.begin():
                await connection.execute(_UNLOCK, _KEY)


async def upgrade_schema(url: str) -> str:
    """Bring the database at `url` to the newest revision; return the revision now in force.
    On PostgreSQL concurrent callers take turns (`MIGRATION_LOCK`) and all succeed."""
    engine = create_engine(url, pool_size=1, writer=True)
    try:
        # Left to right in, right to left out: locked, then begun; committed, then unlocked.
        async with (
            engine.connect() as connection,
            _one_upgrader_at_a_time(connection),
            connection.begin(),
        ):
            before, after = await connection.run_sync(_upgrade)
    finally:
        await engine.dispose()
    database = make_url(url).render_as_string(hide_password=True)
    fields = {"database": database, "from_revision": before, "to_revision": after}
    log.info(_said(before, after), extra={"fields": fields})
    return after
