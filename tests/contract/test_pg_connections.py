"""On PostgreSQL a read of one statement costs that statement alone: no BEGIN and no COMMIT
around it; the connections it ran on go back to the pool as they were; and a pooled connection
is checked before it is handed out with one statement, not a transaction of three."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event

from core.model.participants import ParticipantSet, parse_address
from core.storage.database import Database
from core.storage.engine import create_engine
from core.storage.transact import AsyncTransactor

pytestmark = pytest.mark.postgres

ANN = parse_address("person:ann")


def _logger(sent: list[str]) -> Callable[[Any], None]:
    """An asyncpg query logger: it is given a `LoggedQuery` for each query sent without a
    prepared statement (BEGIN, COMMIT, ROLLBACK, the pool's check) and adds it to `sent`."""

    def logged(query: Any) -> None:
        sent.append(query.query.rstrip(";"))

    return logged


async def test_a_read_of_one_statement_runs_outside_a_transaction(pg: Database) -> None:
    thread, _ = await pg.threads.resolve(ParticipantSet.of(["person:ann", "role:concierge"]))
    await pg.threads.post_message(thread.id, ANN, "hello")
    engine = pg._reads._engine  # type: ignore[attr-defined]
    sent: list[str] = []
    logged = _logger(sent)

    checkouts: list[None] = []

    def checkout(dbapi_connection: Any, *_: Any) -> None:
        checkouts.append(None)
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
    # transaction of its own, with no BEGIN or COMMIT around it, on one connection from the
    # pool (each checkout costs a check) ...
    assert heads_and_page == []
    assert len(checkouts) == 2  # the stream's read, and the timeline's
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


async def test_a_pooled_connection_is_checked_with_one_statement(pg_url: str) -> None:
    engine = create_engine(pg_url, pool_size=1, serving=True)
    transactor = AsyncTransactor(engine)
    sent: list[str] = []

    def one(connection: Any) -> int:
        return int(connection.exec_driver_sql("SELECT 1").scalar())

    def listen(connection: Any) -> None:
        # The one pooled connection's driver logs every query sent without a prepared
        # statement from now on: the check, BEGIN, COMMIT (`one`'s statement is prepared; this
        # unit of work runs none, so no transaction begins).
        connection.connection.driver_connection.add_query_logger(_logger(sent))

    try:
        await transactor.transact(listen)  # on a connection opened for it: not checked
        assert await transactor.transact(one) == 1
    finally:
        await transactor.close()
    # (SQLAlchemy's `pool_pre_ping` would have sent BEGIN, a prepared `;` and ROLLBACK.)
    assert sent == ["SELECT 1", "BEGIN ISOLATION LEVEL REPEATABLE READ", "COMMIT"]
