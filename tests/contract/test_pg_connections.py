"""PostgreSQL connections the server closed are never handed out: after every backend serving
the storage's pools is terminated (as a restart of the server does), the very next read and
write run on fresh connections — no request fails for a connection that was already gone. And
a read of one statement costs that statement alone: no BEGIN, no COMMIT, no ping around it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event

from core.model.participants import ParticipantSet, parse_address
from core.storage.database import Database, open_database
from core.storage.slot_locks import APPLICATION_NAME as SLOTS
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

ANN = parse_address("person:ann")


@pytest.fixture
async def pg(database_url: str) -> AsyncIterator[Database]:
    if "postgresql" not in database_url:
        pytest.skip("the pools of PostgreSQL's connections")
    db = await open_database(database_url)
    try:
        yield db
    finally:
        await db.close()


async def _admin(url: str, statement: str, *args: Any) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        return list(await connection.fetch(statement, *args))
    finally:
        await connection.close()


async def _terminate_pools(url: str) -> None:
    """Terminate every other backend of the database (the pools' connections, the
    notifications' too), and wait until the server has closed them all."""
    others = (
        "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND application_name <> $1"
    )
    rows = await _admin(url, f"SELECT pid, pg_terminate_backend(pid) AS done {others}", SLOTS)
    terminated = [row["pid"] for row in rows if row["done"]]
    assert terminated, "the storage had connections open"

    async def gone() -> bool:
        left = await _admin(url, "SELECT pid FROM pg_stat_activity WHERE pid = ANY($1)", terminated)
        return not left

    await eventually(gone, what="the terminated backends are gone")


async def test_the_next_read_and_write_after_every_connection_was_closed_succeed(
    pg: Database, database_url: str
) -> None:
    thread, _ = await pg.threads.resolve(ParticipantSet.of(["person:ann", "role:concierge"]))
    said = await pg.threads.post_message(thread.id, ANN, "before")
    assert [e.id for e in (await pg.threads.events_since(0)).events] == [said.id]

    await _terminate_pools(database_url)
    # Neither fails as `StorageUnavailable`: each runs on a connection opened for it.
    assert [e.id for e in (await pg.threads.events_since(0)).events] == [said.id]
    after = await pg.threads.post_message(thread.id, ANN, "after")
    assert [e.id for e in (await pg.threads.events_since(0)).events] == [said.id, after.id]


async def test_a_read_of_one_statement_runs_outside_a_transaction(pg: Database) -> None:
    thread, _ = await pg.threads.resolve(ParticipantSet.of(["person:ann", "role:concierge"]))
    await pg.threads.post_message(thread.id, ANN, "hello")
    engine = pg._reads._engine  # type: ignore[attr-defined]
    sent: list[str] = []

    def logged(query: Any) -> None:
        # asyncpg's `LoggedQuery`, for each query sent without a prepared statement: BEGIN,
        # COMMIT and ROLLBACK, and the statement of a ping.
        sent.append(query.query.rstrip(";"))

    def checkout(dbapi_connection: Any, *_: Any) -> None:
        dbapi_connection.driver_connection.add_query_logger(logged)

    def checkin(dbapi_connection: Any, *_: Any) -> None:
        dbapi_connection.driver_connection.remove_query_logger(logged)

    event.listen(engine.sync_engine, "checkout", checkout)
    event.listen(engine.sync_engine, "checkin", checkin)
    try:
        page = await pg.threads.events_since(0)
        heads_and_page = list(sent)
        said = await pg.threads.timeline(thread.id)
    finally:
        event.remove(engine.sync_engine, "checkout", checkout)
        event.remove(engine.sync_engine, "checkin", checkin)
    assert len(page.events) == 1 and len(said.events) == 1
    # The heads (the sequences, then the writers' locks) and the page: each statement a
    # transaction of its own, with no ping, BEGIN or COMMIT around it ...
    assert heads_and_page == []
    # ... while a timeline page, read in one snapshot, is a transaction.
    assert sent == ["BEGIN ISOLATION LEVEL REPEATABLE READ", "COMMIT"]


async def test_connections_read_in_autocommit_go_back_to_the_pool_as_they_were(
    pg: Database,
) -> None:
    size = pg._reads._engine.sync_engine.pool.size()  # type: ignore[attr-defined]
    await asyncio.gather(*(pg.threads.events_since(0) for _ in range(size)))

    def isolation(connection: Any) -> str:
        return str(connection.exec_driver_sql("SHOW transaction_isolation").scalar())

    levels = await asyncio.gather(*(pg._reads.transact(isolation) for _ in range(size)))
    assert set(levels) == {"repeatable read"}
