"""A failing command fails alone: whatever a command of a batch raises, and wherever it raises
(while it writes, when the batch flushes what it staged, in its answer after the commit), the
other commands of its batch commit, nothing of the failed one remains, and readers see positions
in order — without gaps on SQLite, where a rolled-back savepoint gives its positions back; on
PostgreSQL the sequences' positions a failed command took stay a gap. On SQLite and PostgreSQL.

The failing commands are built directly, past the HTTP edge (which refuses such values first):
a message whose text the driver cannot encode fails at flush; test-only commands raise while
they write, after staging or writing rows of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from core.model.errors import Conflict
from core.model.participants import ParticipantSet, parse_address
from core.model.timeline import Message, ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.database import Database
from core.storage.threads_commands import PostMessage

ALICE = parse_address("person:alice")
BOB = parse_address("person:bob")
ROLE = parse_address("role:concierge")


@dataclass(frozen=True, slots=True)
class StageThenRaise(NoRuns):
    """Stages a message and writes a thread row of its own, then raises (a bug, say)."""

    thread_id: ThreadId
    error: Exception

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.stage(
            batch.thread(self.thread_id), Message, author=ALICE, text="partial", context=None
        )
        batch.connection.execute(
            schema.threads.insert().values(id="leftover", set_key="leftover", created_at=0)
        )
        raise self.error


@dataclass(frozen=True, slots=True)
class InsertHugeNumber(NoRuns):
    """Writes an integer no backend stores (2^63): the driver raises as the statement runs."""

    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.execute(
            schema.threads.insert().values(id="huge", set_key="huge", created_at=2**63)
        )
        return lambda: None


@dataclass(frozen=True, slots=True)
class AnswerRaises(NoRuns):
    """Commits a message, then its answer (computed after the commit) raises."""

    thread_id: ThreadId

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        post = PostMessage(self.thread_id, ALICE, "kept", None)
        post.check(batch.view)
        post.write(batch, None)

        def answer() -> None:
            raise RuntimeError("the answer failed")

        return answer


async def _threads(database: Database) -> tuple[ThreadId, ThreadId]:
    one, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    two, _ = await database.threads.resolve(ParticipantSet.of([ALICE, BOB, ROLE]))
    return one.id, two.id


async def _all_at_once(database: Database, commands: list[Any]) -> list[Any]:
    """Hand every command to the writer in the same turn of the loop: they share a batch."""
    writer = database._writer
    return list(await asyncio.gather(*(writer.run(c) for c in commands), return_exceptions=True))


async def _positions(database: Database) -> list[int]:
    e = schema.events
    return list(
        await database._writes.transact(
            lambda c: c.execute(select(e.c.position).order_by(e.c.position)).scalars().all()
        )
    )


async def _count(database: Database, table: Any) -> int:
    return int(
        await database._writes.transact(
            lambda c: c.execute(select(func.count()).select_from(table)).scalar_one()
        )
    )


async def _texts(database: Database, thread_id: ThreadId) -> list[tuple[int, str]]:
    events = (await database.threads.timeline(thread_id)).events
    return [(e.seq, e.text) for e in events if isinstance(e, Message)]


def _interleaved(
    one: ThreadId, two: ThreadId, bad: list[Any]
) -> tuple[list[Any], list[int], list[str]]:
    """Valid messages in both threads with the bad commands between them; the indexes of the
    bad ones, and the texts the valid ones post in thread `one`."""
    commands: list[Any] = []
    bad_at: list[int] = []
    texts: list[str] = []
    for i in range(12):
        thread = one if i % 2 == 0 else two
        commands.append(PostMessage(thread, ALICE, f"valid {i}", None))
        if thread == one:
            texts.append(f"valid {i}")
        if i % 4 == 1 and bad:
            bad_at.append(len(commands))
            commands.append(bad.pop(0))
    commands += bad
    return commands, bad_at, texts


async def test_commands_that_fail_at_flush_fail_alone(
    database: Database, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A lone surrogate, a NUL (which PostgreSQL refuses) and an integer of 2^63: each of them
    fails its own command only; the valid messages around them all commit, in order."""
    one, two = await _threads(database)
    bad = [
        PostMessage(one, ALICE, "lone \ud800 surrogate", None),
        PostMessage(two, ALICE, "lone \udfff at the end \ud800", None),
        InsertHugeNumber(),
    ]
    if database_url.startswith("postgresql"):
        bad.append(PostMessage(one, ALICE, "a NUL \x00 here", None))
    commands, bad_at, texts = _interleaved(one, two, list(bad))
    results = await _all_at_once(database, commands)
    for i, result in enumerate(results):
        if i in bad_at or commands[i] in bad:
            assert isinstance(result, Exception), (i, result)
        else:
            assert isinstance(result, Message), (i, result)
    assert "redoing the batch with a savepoint per command" in caplog.text
    assert [text for _, text in await _texts(database, one)] == texts
    assert [seq for seq, _ in await _texts(database, one)] == list(range(1, len(texts) + 1))
    assert await _count(database, schema.threads) == 2  # nothing of InsertHugeNumber
    positions = await _positions(database)
    assert len(positions) == 12 and positions == sorted(positions)
    assert await database.threads.head() >= positions[-1]
    if not database_url.startswith("postgresql"):
        assert positions == list(range(1, 13))


async def test_commands_that_raise_while_they_write_leave_nothing_and_fail_alone(
    database: Database, database_url: str
) -> None:
    """A command that staged a message and wrote a row, then raised — a bug (`ValueError`) or a
    domain error (`Conflict`) — leaves neither behind; the commands around it commit."""
    one, two = await _threads(database)
    bug, refusal = ValueError("a bug"), Conflict("refused late", code="refused_late")
    commands, bad_at, texts = _interleaved(
        one, two, [StageThenRaise(one, bug), StageThenRaise(two, refusal)]
    )
    results = await _all_at_once(database, commands)
    assert [results[i] for i in bad_at] == [bug, refusal]
    assert all(isinstance(r, Message) for i, r in enumerate(results) if i not in bad_at)
    assert [text for _, text in await _texts(database, one)] == texts
    assert all(text != "partial" for _, text in await _texts(database, two))
    assert await _count(database, schema.threads) == 2  # no "leftover" thread row
    taken = await _positions(database)
    assert len(taken) == 12 and taken == sorted(taken)
    if not database_url.startswith("postgresql"):
        assert taken == list(range(1, 13))


async def test_a_batch_of_only_failing_commands_commits_nothing_and_the_writer_goes_on(
    database: Database, database_url: str
) -> None:
    one, two = await _threads(database)
    results = await _all_at_once(
        database,
        [PostMessage(one, ALICE, "\ud800", None), StageThenRaise(two, ValueError("bug"))],
    )
    assert all(isinstance(r, Exception) for r in results)
    assert await _positions(database) == []
    after = await database.threads.post_message(one, ALICE, "after")
    assert after.seq == 1 and await _positions(database) == [after.position]
    if not database_url.startswith("postgresql"):  # (there the failed ones left a gap)
        assert after.position == 1


async def test_a_single_failing_command_gets_its_error_and_the_next_batch_commits(
    database: Database,
) -> None:
    one, _ = await _threads(database)
    with pytest.raises((UnicodeEncodeError, DBAPIError), match="surrogate"):
        await database._writer.run(PostMessage(one, ALICE, "\ud800", None))
    after = await database.threads.post_message(one, ALICE, "after")
    assert after.seq == 1 and await _positions(database) == [after.position]


async def test_an_answer_that_raises_after_the_commit_fails_only_its_caller_and_is_not_redone(
    database: Database,
) -> None:
    """The finisher runs after the commit: its failure reaches its own caller; the others in the
    batch get their answers, and nothing is written twice."""
    one, two = await _threads(database)
    results = await _all_at_once(
        database,
        [
            PostMessage(two, ALICE, "before", None),
            AnswerRaises(one),
            PostMessage(two, ALICE, "after", None),
        ],
    )
    assert isinstance(results[0], Message) and isinstance(results[2], Message)
    assert isinstance(results[1], RuntimeError)
    assert await _texts(database, one) == [(1, "kept")]
    assert await _positions(database) == [1, 2, 3]
