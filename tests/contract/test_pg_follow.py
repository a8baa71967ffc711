"""Following another replica's commits on PostgreSQL (`core.storage.follow`): the events a
replica committed reach the others' listeners in the notification that announces them, with no
read; those too large to carry, and those behind a gap nobody fills (positions a rolled-back
batch took), are read — every event dispatched once, in position order."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event

from core.model.participants import ParticipantSet, parse_address
from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent, Message
from core.storage.database import Database, open_database
from core.storage.follow import (
    CARRIED_MOST,
    Heads,
    carried_events,
    heads_payload,
    parse_payload,
)
from core.storage.positions import WRITER_LOCKS
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

ANN = parse_address("person:ann")
MEMBERS = ParticipantSet.of(["person:ann", "role:concierge"])


class Heard:
    """What a replica's listeners were handed, and how many reads its follower made."""

    def __init__(self, db: Database) -> None:
        self.events: list[AnyEvent] = []
        self.reads = 0
        db.listen(self._hear)
        engine = db._reads._engine.sync_engine  # type: ignore[attr-defined]
        event.listen(engine, "checkout", self._checkout)

    def _hear(self, events: Sequence[AnyEvent], _tasks: Sequence[TaskEvent]) -> None:
        self.events += events

    def _checkout(self, *_: Any) -> None:
        self.reads += 1

    def texts(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Message)]


@pytest.fixture
async def two(pg_url: str) -> AsyncIterator[tuple[Database, Database]]:
    """Two replicas' storage on one database; the safety poll out of the way."""
    a = await open_database(pg_url, safety_poll=3600)
    b = await open_database(pg_url, safety_poll=3600)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


async def test_another_replicas_commit_is_handed_over_in_its_notification(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    heard = Heard(b)
    thread, _ = await a.threads.resolve(MEMBERS)
    for n in range(5):
        await a.threads.post_message(thread.id, ANN, f"hello {n}")

    async def all_heard() -> bool:
        return heard.texts() == [f"hello {n}" for n in range(5)]

    await eventually(all_heard, what="b's listeners handed a's messages")
    assert heard.reads == 0
    positions = [e.position for e in heard.events]
    assert positions == sorted(set(positions))


async def test_a_commit_too_large_to_carry_is_read(two: tuple[Database, Database]) -> None:
    a, b = two
    heard = Heard(b)
    thread, _ = await a.threads.resolve(MEMBERS)
    long = "x" * CARRIED_MOST
    await a.threads.post_message(thread.id, ANN, long)
    await a.threads.post_message(thread.id, ANN, "after")

    async def both_heard() -> bool:
        return heard.texts() == [long, "after"]

    await eventually(both_heard, what="the long message read, the short one after it")
    assert heard.reads >= 1


async def test_events_behind_positions_nobody_commits_are_read_after_a_while(
    two: tuple[Database, Database], pg_url: str
) -> None:
    a, b = two
    heard_a, heard_b = Heard(a), Heard(b)
    thread, _ = await a.threads.resolve(MEMBERS)
    await a.threads.post_message(thread.id, ANN, "before the gap")

    async def first_heard() -> bool:
        return heard_a.texts() == heard_b.texts() == ["before the gap"]

    await eventually(first_heard, what="the first message here and there")
    reads_before = heard_a.reads, heard_b.reads
    # A batch that took positions and rolled back leaves them behind: nobody commits them.
    connection = await asyncpg.connect(pg_url.replace("+asyncpg", ""))
    try:
        await connection.fetchval("SELECT nextval('events_positions')")
    finally:
        await connection.close()
    said = await a.threads.post_message(thread.id, ANN, "past the gap")

    async def heard_everywhere() -> bool:
        return heard_a.texts()[-1:] == heard_b.texts()[-1:] == ["past the gap"]

    await eventually(heard_everywhere, what="the message past the gap, here and there")
    assert [e.id for e in heard_a.events] == [e.id for e in heard_b.events]
    assert heard_b.events[-1].id == said.id
    # Held behind the gap until a read found it closed, on the replica that committed too.
    assert heard_a.reads > reads_before[0] and heard_b.reads > reads_before[1]


def test_a_payload_carries_the_events_as_a_read_gives_them() -> None:
    said = Message(
        id="e1",  # type: ignore[arg-type]
        thread_id="t1",  # type: ignore[arg-type]
        seq=3,
        position=41,
        at=datetime(2026, 12, 7, 12, 0, tzinfo=UTC),
        author=ANN,
        text='héllo "there"',
        context=None,
        channel="widget",
    )
    payload = heads_payload(Heads(41, 7), 1_765_000_000.5, [said])
    assert len(payload.encode()) == len(payload)  # ASCII: what PostgreSQL's limit counts
    heads, sent_at, carried = parse_payload(payload)
    assert (heads, sent_at, carried_events(carried)) == (Heads(41, 7), 1_765_000_000.5, [said])
    big = dataclasses.replace(said, text="x" * CARRIED_MOST)
    assert parse_payload(heads_payload(Heads(41, 7), 1.0, [big]))[2] == ""  # heads only


async def test_a_listener_reads_what_it_was_handed_while_another_batch_is_open(
    two: tuple[Database, Database], pg_url: str
) -> None:
    """An open batch of a third writer holds the committed head below what b was handed from a's
    notification; b's reads still go as far as what b's listeners were told of."""
    a, b = two
    heard = Heard(b)
    thread, _ = await a.threads.resolve(MEMBERS)
    first = await a.threads.post_message(thread.id, ANN, "first")

    async def first_heard() -> bool:
        return heard.texts() == ["first"]

    await eventually(first_heard, what="the first message at b")
    stalled = await asyncpg.connect(pg_url.replace("+asyncpg", ""))
    try:
        key = await stalled.fetchval(
            "INSERT INTO stream_writers (writer, lock_key, events, task_events, audit,"
            " registered_at, used_at) SELECT 'stalled', MAX(lock_key) + 1, $1, 0, 0, 0, 0"
            " FROM stream_writers RETURNING lock_key",
            first.position,
        )
        transaction = stalled.transaction()
        await transaction.start()
        await stalled.execute("SELECT pg_advisory_xact_lock($1, $2)", WRITER_LOCKS, key)
        said = await a.threads.post_message(thread.id, ANN, "while it is open")

        async def handed() -> bool:
            return heard.texts() == ["first", "while it is open"]

        await eventually(handed, what="the second message handed to b's listeners")
        page = await b.threads.events_since(first.position)
        assert [e.id for e in page.events] == [said.id]
        await transaction.rollback()
        await stalled.execute("DELETE FROM stream_writers WHERE writer = 'stalled'")
    finally:
        await stalled.close()
