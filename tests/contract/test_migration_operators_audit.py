"""Schema 0021 on a database at 0020, on SQLite and PostgreSQL: what was there stays (a thread, a
person, the position counters), the token and audit tables arrive empty with the audit counter at
zero, and the gateway's repositories work on the result; downgrading takes only them away."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg
import pytest
from alembic import command
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine

from core.model.audit import Action
from core.model.timeline import ThreadId
from core.storage import open_database
from core.storage.migrate import _config, newest_revision, upgrade_schema
from tests.conftest import ADMIN_URL, _admin, _missing

THREAD = "0" * 31 + "7"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database with no schema yet: a SQLite file, or a PostgreSQL database of its own."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
        return
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


def _at_0020_with_data(connection: Connection) -> None:
    command.upgrade(_config(connection), "0020")
    connection.execute(
        text(
            "INSERT INTO threads (id, set_key, created_at, memory_thread_only, last_seq, "
            "last_at, archive_before) VALUES (:id, 'k', 1, true, 0, 0, 0)"
        ),
        {"id": THREAD},
    )
    for address in ("person:ann", "role:echo"):
        connection.execute(
            text(
                "INSERT INTO thread_participants (thread_id, address, state) "
                "VALUES (:id, :address, 'active')"
            ),
            {"id": THREAD, "address": address},
        )
    connection.execute(
        text(
            "INSERT INTO persons (slug, display_name, active, created_at) "
            "VALUES ('ann', 'Ann', true, 1)"
        )
    )
    connection.execute(text("UPDATE stream_positions SET value = 41 WHERE stream = 'events'"))


def _downgrade_to_0020(connection: Connection) -> None:
    command.downgrade(_config(connection), "0020")


async def _run(url: str, work: Callable[[Connection], None]) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(work)
    finally:
        await engine.dispose()


async def _query(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return [tuple(row) for row in await connection.execute(text(sql))]
    finally:
        await engine.dispose()


async def test_0021_keeps_what_was_there_and_adds_empty_tokens_and_trail(empty_url: str) -> None:
    await _run(empty_url, _at_0020_with_data)

    assert await upgrade_schema(empty_url) == newest_revision()  # the later ones after it

    counters = await _query(empty_url, "SELECT stream, value FROM stream_positions")
    assert {str(row[0]): row[1] for row in counters} == {"events": 41, "task_events": 0, "audit": 0}
    assert await _query(empty_url, "SELECT slug, display_name FROM persons") == [("ann", "Ann")]
    assert await _query(empty_url, "SELECT count(*) FROM operator_tokens") == [(0,)]
    assert await _query(empty_url, "SELECT count(*) FROM audit_records") == [(0,)]
    db = await open_database(empty_url)
    try:
        thread = await db.threads.get(ThreadId(THREAD))
        assert [str(a) for a, _ in thread.participants] == ["person:ann", "role:echo"]
        ann = await db.people.get("ann")
        assert (ann.display_name, ann.state, ann.erased_at) == ("Ann", "active", None)
        await db.operators.configure_default("configured-operator-token-0123456789")
        record = await db.audit.record(Action(actor="default", client="", action="run.cancel"))
        assert record.position == 1
    finally:
        await db.close()

    await _run(empty_url, _downgrade_to_0020)
    assert await _query(empty_url, "SELECT slug FROM persons") == [("ann",)]
    counters = await _query(empty_url, "SELECT stream FROM stream_positions ORDER BY stream")
    assert counters == [("events",), ("task_events",)]
