"""Replicas started together migrate once: several processes upgrading one PostgreSQL database
at the same moment all succeed and leave it at head (`core.storage.migrate`, `MIGRATION_LOCK`).

Each upgrader is an OS process of its own (`upgrade_schema` in `python -c`). To make them meet,
each one imports everything, says "ready" and waits at a gate (its stdin); the test opens every
gate at once, so the upgrades start within a few milliseconds of each other. Without the lock
most rounds fail on a duplicate catalogue row (`pg_type_typname_nsp_index`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import asyncpg
import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from core.storage.migrate import MIGRATIONS
from tests.conftest import ADMIN_URL, _admin, _missing

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]
UPGRADERS = 4
ROUNDS = 3
OLDER = "0010"

UPGRADER = """\
import asyncio, sys
from core.storage.migrate import upgrade_schema
print("ready", flush=True)
sys.stdin.readline()
print(asyncio.run(upgrade_schema(sys.argv[1])), flush=True)
"""

FreshDatabase = Callable[[], AbstractAsyncContextManager[str]]


def _head() -> str:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


@pytest.fixture
def fresh_database() -> FreshDatabase:
    """`async with fresh_database() as url:` an empty database of its own, dropped afterwards."""

    @asynccontextmanager
    async def created() -> AsyncIterator[str]:
        name = f"rolecall_migrate_{uuid.uuid4().hex[:12]}"
        try:
            await _admin(f'CREATE DATABASE "{name}"')
        except (OSError, asyncpg.PostgresError) as exc:
            _missing(f"{type(exc).__name__}: {exc}")
        base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
        try:
            yield f"{base}/{name}"
        finally:
            await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return created


async def _revisions(url: str) -> list[str]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        rows = await connection.fetch("SELECT version_num FROM alembic_version")
    finally:
        await connection.close()
    return [row["version_num"] for row in rows]


def _upgrade_to(revision: str) -> Callable[[Connection], None]:
    def upgrade(connection: Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    return upgrade


async def _upgrade_with_alembic(url: str, revision: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade_to(revision))
    finally:
        await engine.dispose()


def _race(url: str) -> list[tuple[int, str, str]]:
    """`UPGRADERS` processes upgrading `url` at once; each one's exit status, stdout, stderr."""
    upgraders = [
        subprocess.Popen(
            [sys.executable, "-c", UPGRADER, url],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(UPGRADERS)
    ]
    try:
        for upgrader in upgraders:  # each waits at its gate once it has imported everything
            assert upgrader.stdout is not None
            assert upgrader.stdout.readline() == "ready\n", upgrader.communicate()[1]
        for upgrader in upgraders:
            assert upgrader.stdin is not None
            upgrader.stdin.write("go\n")
            upgrader.stdin.flush()
        ended = [(u, *u.communicate(timeout=60)) for u in upgraders]
        return [(u.returncode, out, err) for u, out, err in ended]
    finally:
        for upgrader in upgraders:
            if upgrader.poll() is None:
                upgrader.kill()
                upgrader.wait()


async def _race_to_head(url: str) -> None:
    head = _head()
    results = await asyncio.to_thread(_race, url)
    for returncode, out, err in results:
        assert returncode == 0, err
        assert out.splitlines()[-1] == head, out
    assert await _revisions(url) == [head]


async def test_upgraders_started_together_on_a_fresh_database_all_succeed(
    fresh_database: FreshDatabase,
) -> None:
    for _ in range(ROUNDS):
        async with fresh_database() as url:
            await _race_to_head(url)


async def test_upgraders_started_together_on_an_older_schema_all_succeed(
    fresh_database: FreshDatabase,
) -> None:
    for _ in range(ROUNDS):
        async with fresh_database() as url:
            await _upgrade_with_alembic(url, OLDER)
            assert await _revisions(url) == [OLDER]
            await _race_to_head(url)
