"""Positions without a global lock (PostgreSQL, `core.storage.positions`): a batch still open on
one writer holds every reader below the positions it may commit, however many later positions
other writers have committed; its commit, or its rollback (its connection gone, as when its
replica dies), lets the readers on at once; and no reader ever resumes past a position that is
committed after it read — nor does a webhook endpoint or a task subscription that begins while
another writer's batch is open. A take waiting for its writer's lock has handed out no
position yet."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from core.model.endpoints import Filters, new_secret
from core.model.participants import ParticipantSet, parse_address
from core.model.tasks import Actor
from core.storage import positions
from core.storage.database import Database

pytestmark = pytest.mark.postgres

ANN = parse_address("person:ann")


@asynccontextmanager
async def open_batch(
    url: str, stream: str = "events"
) -> AsyncIterator[tuple[AsyncConnection, list[int]]]:
    """Another writer's batch, left open after taking one position of `stream` (its first
    statement: the take holds the writer's lock itself)."""
    engine = create_async_engine(url, isolation_level="READ COMMITTED")
    try:
        async with engine.connect() as connection:
            writer = await connection.run_sync(lambda c: positions.register_writer(c, 0))
            await connection.commit()
            taken = await connection.run_sync(lambda c: positions.take(c, stream, 1, writer, 0))
            yield connection, taken
    finally:
        await engine.dispose()


async def _said(db: Database, text: str) -> int:
    thread, _ = await db.threads.resolve(ParticipantSet.of(["person:ann", "role:concierge"]))
    return (await db.threads.post_message(thread.id, ANN, text)).position


async def _read(db: Database) -> list[int]:
    return [e.position for e in (await db.threads.events_since(0)).events]


async def test_an_open_batch_holds_readers_below_it_until_it_commits(
    pg: Database, database_url: str
) -> None:
    first = await _said(pg, "before")
    async with open_batch(database_url) as (other, [held]):
        later = await _said(pg, "after the other batch took its position")
        assert first < held < later
        assert await _read(pg) == [first]  # `later` is committed, but `held` may still be
        assert await pg.threads.head() == held - 1
        await other.commit()
    assert later in await _read(pg)
    assert await pg.threads.head() >= later


async def test_a_batch_whose_connection_is_gone_holds_nobody(
    pg: Database, database_url: str
) -> None:
    async with open_batch(database_url) as (other, _):
        later = await _said(pg, "said while the other batch is open")
        assert later not in await _read(pg)
        await other.close()  # its transaction is rolled back: `held` is never committed
    assert later in await _read(pg)


async def test_positions_taken_in_a_batch_increase_and_are_recorded_with_the_writer(
    pg: Database, database_url: str
) -> None:
    async with open_batch(database_url) as (other, [held]):
        await other.commit()
    one = await _said(pg, "one")
    two = await _said(pg, "two")
    assert held < one < two
    heads = await pg._reads.transact(positions.handed_out)
    assert heads.events == two


async def test_a_new_endpoint_starts_below_a_position_another_writer_may_still_commit(
    pg: Database, database_url: str
) -> None:
    async with open_batch(database_url) as (other, [held]):
        later = await _said(pg, "committed while the other batch is open")
        endpoint = await pg.endpoints.create(
            url="https://hooks.example/h", secret=new_secret(b"k" * 24), filters=Filters()
        )
        # From the positions handed out (`later`) it would pass over `held` for good.
        assert endpoint.cursors.position == held - 1 < later
        await other.commit()


async def test_a_subscription_begins_below_a_task_event_another_writer_may_still_commit(
    pg: Database, database_url: str
) -> None:
    thread, _ = await pg.threads.resolve(ParticipantSet.of(["person:ann", "role:concierge"]))
    run, _ = await pg.runs.ensure_conversation_run(thread.id, "concierge")
    task, _ = await pg.tasks.create(
        title="Order chairs", body="", assignee=None, external=None, actor=Actor.person(ANN)
    )
    async with open_batch(database_url, "task_events") as (other, [held]):
        _, later = await pg.tasks.create(
            title="Order desks", body="", assignee=None, external=None, actor=Actor.person(ANN)
        )
        assert await pg.subscriptions.subscribe(run.id, task.id) is True
        [subscriber], _ = await pg.subscriptions.subscribers(task.id)
        assert subscriber.since == held - 1 < later.position
        await other.commit()


async def test_a_take_waiting_for_its_writers_lock_has_taken_no_position(
    pg: Database, database_url: str
) -> None:
    """The lock comes before the positions, in the one statement: a position handed out before
    the lock is held would be one that readers could pass while it is still uncommitted."""
    engine = create_async_engine(database_url, isolation_level="READ COMMITTED")
    try:
        async with engine.connect() as holder, engine.connect() as taker:
            writer = await taker.run_sync(lambda c: positions.register_writer(c, 0))
            await taker.commit()
            await holder.execute(
                text("SELECT pg_advisory_xact_lock(:a, :b)"),
                {"a": positions.WRITER_LOCKS, "b": writer.lock_key},
            )
            before = await holder.run_sync(positions.handed_out)
            await taker.execute(text("SET LOCAL statement_timeout = 200"))
            with pytest.raises(DBAPIError, match="statement timeout"):
                await taker.run_sync(lambda c: positions.take(c, "events", 3, writer, 0))
            await taker.rollback()
            assert await holder.run_sync(positions.handed_out) == before
            await holder.rollback()
            taken = await taker.run_sync(lambda c: positions.take(c, "events", 3, writer, 0))
            assert taken == [before.events + 1, before.events + 2, before.events + 3]
    finally:
        await engine.dispose()
