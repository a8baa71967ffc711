"""The group-commit writer: one refused command does not sink the others in its batch (more in
`test_writer_isolation.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from core.model.participants import ParticipantSet, parse_address
from core.model.timeline import Message, ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.database import Database, open_database, upgrade_schema
from core.storage.threads_commands import PostMessage
from core.storage.transact import SqliteWriteTransactor

ALICE = parse_address("person:alice")
ROLE = parse_address("role:concierge")


@dataclass(frozen=True, slots=True)
class InsertDuplicateThread(NoRuns):
    """A write the database refuses: a second thread row with an existing participant-set key."""

    set_key: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.execute(
            schema.threads.insert().values(id="duplicate", set_key=self.set_key, created_at=0)
        )
        return lambda: None


async def test_a_command_the_database_refuses_fails_alone_and_the_rest_of_its_batch_commits(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """The refused insert rolls the quick way back; the batch is redone with a savepoint per
    command, in one transaction: only the refused command fails."""
    participants = ParticipantSet.of([ALICE, ROLE])
    thread, _ = await database.threads.resolve(participants)
    writer = database._writer
    before, refused, after = await asyncio.gather(
        writer.run(PostMessage(thread.id, ALICE, "before", None)),
        writer.run(InsertDuplicateThread(participants.key)),
        writer.run(PostMessage(thread.id, ALICE, "after", None)),
        return_exceptions=True,
    )
    assert "a command of a batch of 3 raised IntegrityError" in caplog.text
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


async def test_sqlite_writes_wait_for_another_writers_lock_off_the_event_loop(
    tmp_path: Path,
) -> None:
    """The writer's statements run on the loop, but a lock held by another connection (another
    process, say) is waited for in the writer's thread: the loop keeps turning meanwhile, and the
    message is committed once the lock is released."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'rolecall.db'}"
    await upgrade_schema(url)
    db = await open_database(url)
    try:
        thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
        other = sqlite3.connect(tmp_path / "rolecall.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        post = asyncio.ensure_future(db.threads.post_message(thread.id, ALICE, "after the lock"))
        turns, started = 0, time.monotonic()
        while time.monotonic() - started < 0.3:
            await asyncio.sleep(0.01)
            turns += 1
        assert not post.done()
        assert turns >= 10, f"the event loop was blocked: {turns} turns in 0.3 s"
        other.execute("COMMIT")
        other.close()
        message = await asyncio.wait_for(post, 10)
        page = await db.threads.timeline(thread.id)
        assert [e.id for e in page.events if isinstance(e, Message)] == [message.id]
        # Once the lock is gone, batches run on the loop again and keep committing.
        again = await db.threads.post_message(thread.id, ALICE, "and after that")
        assert again.seq == message.seq + 1
    finally:
        await db.close()


@dataclass(frozen=True, slots=True)
class InsertOrphanAtCommit(NoRuns):
    """A write SQLite refuses only at COMMIT: a member row of no thread, its foreign key checked
    late (`defer_foreign_keys` lasts until the end of this transaction)."""

    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.exec_driver_sql("PRAGMA defer_foreign_keys=ON")
        batch.connection.execute(
            schema.thread_participants.insert().values(
                thread_id="no-such-thread", address="person:alice", state="active"
            )
        )
        return lambda: None


async def test_a_batch_refused_at_commit_answers_its_caller_and_the_writer_goes_on(
    tmp_path: Path,
) -> None:
    """On SQLite the COMMIT runs apart from the statements (in the writer's thread); when it is
    the COMMIT that fails, the caller gets the error, nothing of the batch stays, and the next
    batch commits."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'rolecall.db'}"
    await upgrade_schema(url)
    db = await open_database(url)
    try:
        assert isinstance(db._writes, SqliteWriteTransactor)
        thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
        with pytest.raises(IntegrityError, match="FOREIGN KEY"):
            await db._writer.run(InsertOrphanAtCommit())
        message = await db.threads.post_message(thread.id, ALICE, "after")
        assert message.seq == 1
        page = await db.threads.timeline(thread.id)
        assert [e.id for e in page.events] == [message.id]
    finally:
        await db.close()


async def test_a_commit_whose_caller_went_away_is_waited_for_but_not_blamed_on_the_next(
    tmp_path: Path,
) -> None:
    """A caller cancelled while its COMMIT runs in the writer's thread: the next transaction
    waits for that COMMIT to end (one transaction at a time on the connection), and its refusal
    is not raised to the next caller."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'rolecall.db'}"
    await upgrade_schema(url)
    db = await open_database(url)
    try:
        transactor = db._writes
        assert isinstance(transactor, SqliteWriteTransactor)

        def orphan(c: Connection) -> None:
            InsertOrphanAtCommit().write(Batch(c, 0), None)

        first = asyncio.ensure_future(transactor.transact(orphan))
        await asyncio.sleep(0)  # its statements ran; its COMMIT is in the writer's thread
        first.cancel()
        counted = await transactor.transact(
            lambda c: c.exec_driver_sql("SELECT count(*) FROM thread_participants").scalar_one()
        )
        assert counted == 0  # the refused COMMIT left nothing
        with contextlib.suppress(asyncio.CancelledError):
            await first
    finally:
        await db.close()
