"""The group-commit writer: one refused command does not sink the others in its batch."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from sqlalchemy.exc import IntegrityError

from core.participants import ParticipantSet, parse_address
from core.storage import schema
from core.storage.commands import PostMessage
from core.storage.database import Database, open_database
from core.storage.writer import Batch
from core.timeline import Message, ThreadId

ALICE = parse_address("person:alice")
ROLE = parse_address("role:concierge")


@dataclass(frozen=True, slots=True)
class InsertDuplicateThread:
    """A write the database refuses: a second thread row with an existing participant-set key."""

    set_key: str
    thread_ids: Sequence[ThreadId] = ()

    def apply(self, batch: Batch) -> Callable[[], None]:
        batch.connection.execute(
            schema.threads.insert().values(id="duplicate", set_key=self.set_key, created_at=0)
        )
        return lambda: None


async def test_a_batch_the_database_refuses_is_retried_one_command_at_a_time(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    participants = ParticipantSet.of([ALICE, ROLE])
    thread, _ = await database.threads.resolve(participants)
    writer = database._writer
    before, refused, after = await asyncio.gather(
        writer.run(PostMessage(thread.id, ALICE, "before", None)),
        writer.run(InsertDuplicateThread(participants.key)),
        writer.run(PostMessage(thread.id, ALICE, "after", None)),
        return_exceptions=True,
    )
    assert "batch of 3 refused by the database; retrying one by one" in caplog.text
    assert isinstance(refused, IntegrityError)
    assert isinstance(before, Message) and isinstance(after, Message)
    events = (await database.threads.timeline(thread.id)).events
    assert [(e.seq, e.text) for e in events if isinstance(e, Message)] == [
        (1, "before"),
        (2, "after"),
    ]
    assert await database.threads.head() == 2


async def test_callers_are_answered_only_after_commit(database: Database) -> None:
    """What a caller is told is already readable by anyone: the answer follows the commit."""
    thread, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))

    async def post_and_read(i: int) -> bool:
        message = await database.threads.post_message(thread.id, ALICE, f"m{i}")
        page = await database.threads.timeline(thread.id, after=message.seq - 1, limit=1)
        return [e.id for e in page.events] == [message.id]

    assert all(await asyncio.gather(*(post_and_read(i) for i in range(40))))


@pytest.mark.parametrize("count", [1, 300])
async def test_everything_queued_is_committed_before_close(database_url: str, count: int) -> None:
    db = await open_database(database_url)
    thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    pending = [
        asyncio.ensure_future(db.threads.post_message(thread.id, ALICE, f"m{i}"))
        for i in range(count)
    ]
    await asyncio.sleep(0)
    await db.close()
    assert all(p.done() and not p.exception() for p in pending)
    reopened = await open_database(database_url)
    try:
        assert await reopened.threads.head() == count
    finally:
        await reopened.close()
