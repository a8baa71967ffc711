"""Fixtures shared by every suite: a throwaway database on each backend.

`database_url` is parametrised over SQLite (always) and PostgreSQL (the machine's server at
127.0.0.1:5432, or ROLECALL_TEST_POSTGRES_URL). PostgreSQL tests get their own database, created
for the session and dropped at its end, with the tables emptied between tests. When PostgreSQL
cannot be reached the tests skip — except when CI is set, where a missing server fails the run.

The fixtures of recorded spans, `recorded` and `core_spans`, are `tests.spans`'s, offered here.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from core.storage import schema
from core.storage.database import Database, open_database, upgrade_schema
from tests.spans import core_spans, recorded  # noqa: F401 (fixtures, offered to every suite)

ADMIN_URL = os.environ.get(
    "ROLECALL_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def in_ci() -> bool:
    """CI is set (to anything but an explicit no)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing(reason: str) -> None:
    if in_ci():
        pytest.fail(f"PostgreSQL is required in CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL not available: {reason}")


async def _admin(statement: str) -> None:
    connection = await asyncpg.connect(ADMIN_URL, timeout=5)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of its own on the machine's PostgreSQL, migrated; dropped afterwards."""
    name = f"rolecall_test_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        _missing(f"{type(exc).__name__}: {exc}")
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    url = f"{base}/{name}"
    try:
        asyncio.run(upgrade_schema(url))
        yield url
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _empty_postgres(url: str) -> None:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        tables = [t.name for t in schema.metadata.sorted_tables if t.name != "stream_positions"]
        restarts = "; ".join(
            f"ALTER SEQUENCE {sequence} RESTART WITH 1"
            for sequence in schema.POSITION_SEQUENCES.values()
        )
        await connection.execute(
            f"TRUNCATE {', '.join(tables)}; UPDATE stream_positions SET value = 0; {restarts}"
        )
    finally:
        await connection.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database: a SQLite file, or the session's PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'rolecall.db'}"
        asyncio.run(upgrade_schema(url))
        return url
    url = str(request.getfixturevalue("postgres_database"))
    asyncio.run(_empty_postgres(url))
    return url


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = await open_database(database_url)
    try:
        yield db
    finally:
        await db.close()
