"""Storage on a PostgreSQL server that goes away: `StorageUnavailable`, promptly, and back again.

On a server of the test's own (`pg_cluster`): a failure for a reason of the server's — it is
stopped, it ended the connection, it has no connection left — is raised as `StorageUnavailable`
within seconds, whatever asyncpg called it; a failure of the work itself keeps its own type; and
the same `Database` serves again once the server is back, on fresh connections.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from core.model.participants import Address, ParticipantSet
from core.storage.database import Database, open_database, upgrade_schema
from core.storage.engine import create_engine
from core.storage.errors import StorageUnavailable
from core.storage.transact import AsyncTransactor
from tests.faults.conftest import Cluster
from tests.waiting import eventually

ANN = Address("person:ann")
PROMPTLY = 6.0
"""Seconds within which an outage is reported (the engine connects within 5)."""


@pytest.fixture
async def database(pg_cluster: Cluster) -> AsyncIterator[Database]:
    await upgrade_schema(pg_cluster.url)
    db = await open_database(pg_cluster.url)
    try:
        yield db
    finally:
        await db.close()


def _driver_url(cluster: Cluster) -> str:
    return cluster.url.replace("postgresql+asyncpg://", "postgresql://")


async def _refused_promptly(call: Awaitable[Any]) -> StorageUnavailable:
    """`call` raises `StorageUnavailable`, with its advice, within `PROMPTLY` seconds."""
    started = time.monotonic()
    with pytest.raises(StorageUnavailable) as refused:
        await call
    assert time.monotonic() - started < PROMPTLY
    assert refused.value.retry_after >= 1 and refused.value.reason
    return refused.value


async def test_a_stopped_server_is_unavailable_and_the_same_database_serves_once_it_is_back(
    pg_cluster: Cluster, database: Database
) -> None:
    thread, _ = await database.threads.resolve(ParticipantSet.of([ANN, "role:echo"]))
    await database.threads.post_message(thread.id, ANN, "before")
    await asyncio.to_thread(pg_cluster.stop)

    await _refused_promptly(database.threads.head())
    await _refused_promptly(database.threads.post_message(thread.id, ANN, "while away"))

    await asyncio.to_thread(pg_cluster.start)

    async def serving() -> bool:
        try:
            await database.threads.head()
        except StorageUnavailable:
            return False
        return True

    await eventually(serving)
    await database.threads.post_message(thread.id, ANN, "after")
    page = await database.threads.timeline(thread.id)
    # The write refused while the server was away was not stored (it never reached a COMMIT).
    assert [getattr(e, "text", None) for e in page.events] == ["before", "after"]


async def test_connections_the_server_closed_are_replaced_before_any_work_fails(
    pg_cluster: Cluster, database: Database
) -> None:
    """As after a restart: every pooled connection is dead, and no read or write notices."""
    thread, _ = await database.threads.resolve(ParticipantSet.of([ANN, "role:echo"]))
    await asyncio.gather(*(database.threads.get(thread.id) for _ in range(8)))  # fill the pool
    admin = await asyncpg.connect(_driver_url(pg_cluster))
    try:
        ended = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
    finally:
        await admin.close()
    assert ended >= 2  # the writer's connection and the readers'
    await database.threads.post_message(thread.id, ANN, "still here")
    assert (await database.threads.get(thread.id)).id == thread.id


async def test_a_connection_ended_in_mid_transaction_is_unavailable_and_the_next_one_works(
    pg_cluster: Cluster,
) -> None:
    transactor = AsyncTransactor(create_engine(pg_cluster.url, pool_size=1, serving=True))
    try:
        kill_myself = text("SELECT pg_terminate_backend(pg_backend_pid())")
        refused = await _refused_promptly(transactor.transact(lambda c: c.execute(kill_myself)))
        assert isinstance(refused.__cause__, DBAPIError)
        one = await transactor.transact(lambda c: c.execute(text("SELECT 1")).scalar())
        assert one == 1
    finally:
        await transactor.close()


async def test_a_failure_of_the_work_itself_is_not_unavailability(pg_cluster: Cluster) -> None:
    """A bad value (a NUL, which PostgreSQL's text cannot hold) or a bad statement is the
    work's fault: it keeps its own type, for the layers above to call a bad request or a bug."""
    transactor = AsyncTransactor(create_engine(pg_cluster.url, pool_size=1, serving=True))
    try:
        with pytest.raises(DBAPIError) as failed:
            await transactor.transact(lambda c: c.execute(text("SELECT 1 / 0")))
        assert not isinstance(failed.value, StorageUnavailable)
        nul = text("SELECT CAST(:v AS text)")
        with pytest.raises(DBAPIError):
            await transactor.transact(lambda c: c.execute(nul, {"v": "a\x00b"}))
        assert await transactor.transact(lambda c: c.execute(text("SELECT 2")).scalar()) == 2
    finally:
        await transactor.close()


async def test_a_server_with_no_connection_left_is_unavailable(pg_cluster: Cluster) -> None:
    slots = 4
    await asyncio.to_thread(
        pg_cluster.restart, f"max_connections={slots}", "superuser_reserved_connections=0"
    )
    await upgrade_schema(pg_cluster.url)
    held = [await asyncpg.connect(_driver_url(pg_cluster)) for _ in range(slots)]
    try:
        refused = await _refused_promptly(open_database(pg_cluster.url))
        assert "no connection left" in refused.reason
    finally:
        for connection in held:
            await connection.close()
    db = await open_database(pg_cluster.url)
    await db.close()
