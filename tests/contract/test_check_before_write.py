"""Check before you change: a command's check reads and refuses, its write writes. On SQLite and
PostgreSQL.

A check gets a read-only view of the batch: one that tries to write is refused (a programming
error) and fails alone. A refusal raised by a write is a bug, reported as one; the command still
fails alone and leaves nothing. And real commands given bad input refuse in their checks: nothing
is written, no position is taken.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import func, select

from core.model.endpoints import EndpointId
from core.model.errors import Conflict, RolecallError
from core.model.membership import ParticipantState
from core.model.participants import ParticipantSet, parse_address
from core.model.people import parse_identity
from core.model.runs.run import RunId, TurnCause, TurnOutcome
from core.model.tasks import Actor, ExternalRef, TaskId
from core.model.timeline import EventId, Message, ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, WriteInCheck
from core.storage.database import Database
from core.storage.endpoints_store import DeleteEndpoint
from core.storage.memory_store import RedactMemory
from core.storage.people_store import CreatePerson, RedeemLinkCode
from core.storage.runs_commands import FinishTaskTurn, FinishTurn, TurnRecord
from core.storage.slack_store import SayFromSlack, SlackDelivery
from core.storage.tasks_store import CommentOnTask, CreateTask
from core.storage.threads_commands import ChangeParticipantState, PostMessage, Retract

ALICE = parse_address("person:alice")
STRANGER = parse_address("person:stranger")
ROLE = parse_address("role:concierge")
REF = ExternalRef(source="github", key="acme/app#1", url="https://example.test/1")


@dataclass(frozen=True, slots=True)
class WritesInCheck(NoRuns):
    """A check that tries to insert a row."""

    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        batch.connection.execute(
            schema.threads.insert().values(id="sneaky", set_key="sneaky", created_at=0)
        )

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        return lambda: None


@dataclass(frozen=True, slots=True)
class RefusesInWrite(NoRuns):
    """Stages a message and writes a row, then refuses: a check misplaced in the write."""

    thread_id: ThreadId

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.stage(batch.thread(self.thread_id), Message, author=ALICE, text="late", context=None)
        batch.connection.execute(
            schema.threads.insert().values(id="leftover", set_key="leftover", created_at=0)
        )
        raise Conflict("refused after writing", code="refused_late")


async def _thread(database: Database) -> ThreadId:
    thread, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    return thread.id


async def _all_at_once(database: Database, commands: list[Any]) -> list[Any]:
    """Hand every command to the writer in the same turn of the loop: they share a batch."""
    writer = database._writer
    return list(await asyncio.gather(*(writer.run(c) for c in commands), return_exceptions=True))


async def _stored(database: Database) -> dict[str, Any]:
    """How many rows every table has, and where the position counters stand."""

    def read(c: Any) -> dict[str, Any]:
        counts: dict[str, Any] = {
            t.name: c.execute(select(func.count()).select_from(t)).scalar_one()
            for t in schema.metadata.sorted_tables
        }
        p = schema.stream_positions
        counts["positions"] = sorted(c.execute(select(p.c.stream, p.c.value)).all())
        return counts

    stored: dict[str, Any] = await database._writes.transact(read)
    return stored


async def test_a_check_that_writes_is_refused_and_fails_alone(database: Database) -> None:
    thread = await _thread(database)
    results = await _all_at_once(
        database,
        [
            PostMessage(thread, ALICE, "before", None),
            WritesInCheck(),
            PostMessage(thread, ALICE, "after", None),
        ],
    )
    assert isinstance(results[1], WriteInCheck)
    assert [r.text for r in (results[0], results[2])] == ["before", "after"]
    assert [r.position for r in (results[0], results[2])] == [1, 2]
    rows = await database._writes.transact(
        lambda c: (
            c.execute(select(schema.threads.c.id).where(schema.threads.c.id == "sneaky"))
            .scalars()
            .all()
        )
    )
    assert rows == []


async def test_a_check_cannot_stage(database: Database) -> None:
    """The view a check gets has no staging, and its states are the batch's, read-only."""
    thread = await _thread(database)

    def look(c: Any) -> BatchView:
        batch = Batch(c, 0)
        batch.load([thread])
        view = batch.view
        assert view.thread(thread).states[ALICE] is ParticipantState.ACTIVE
        return view

    view = await database._writes.transact(look)
    assert not hasattr(view, "stage") and not hasattr(view, "insert_after_flush")


async def test_a_refusal_in_write_is_reported_as_a_bug_and_leaves_nothing(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    thread = await _thread(database)
    before = await _stored(database)
    with caplog.at_level(logging.ERROR, logger="core.storage.writer"):
        results = await _all_at_once(
            database,
            [RefusesInWrite(thread), PostMessage(thread, ALICE, "kept", None)],
        )
        alone = await _all_at_once(database, [RefusesInWrite(thread)])
    for refused in (results[0], alone[0]):
        assert isinstance(refused, Conflict) and refused.code == "refused_late"
    assert "a command refused after writing: checks belong in check" in caplog.text
    assert isinstance(results[1], Message) and (results[1].seq, results[1].position) == (1, 1)
    after = await _stored(database)
    assert after["threads"] == before["threads"]  # no "leftover" row
    assert after["events"] == before["events"] + 1  # only "kept"
    assert await database.threads.head() == 1


async def test_real_commands_refused_by_their_checks_write_nothing(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    thread = await _thread(database)
    run, _ = await database.runs.ensure_conversation_run(thread, "concierge")
    task, _ = await database.tasks.create(
        title="T", body="", assignee="concierge", external=REF, actor=Actor.person(ALICE)
    )
    task_run, _ = await database.runs.ensure_task_run(task.id, "concierge")
    await database.people.create(display_name="Alice", slug="alice")
    record = TurnRecord(
        session_id=run.session.id,
        cause=TurnCause.MESSAGE,
        outcome=TurnOutcome.REPLIED,
        queued_at=0,
        started_at=0,
        finished_at=0,
        prompt={},
        steps=[],
        attempts=[],
    )
    delivery = SlackDelivery(event_id="Ev1", role="concierge", team_id="T1", channel_id="D1")
    bad = [
        PostMessage(thread, STRANGER, "not a member", None),
        ChangeParticipantState(thread, STRANGER, ParticipantState.REMOVED),
        Retract(thread, EventId("no-such-message"), ALICE, None),
        FinishTurn(thread, RunId(run.id), "concierge", 7, 8, 0, 0, ["hi"], None, record, {"s": 1}),
        FinishTaskTurn(RunId(task_run.id), task.id, "concierge", 9, 10, ["done"], record, None),
        FinishTaskTurn(
            RunId(task_run.id), TaskId("no-such-task"), "concierge", 0, 1, ["x"], record, None
        ),
        CreateTask("again", "", None, REF, Actor.person(ALICE)),
        CommentOnTask(TaskId("no-such-task"), "hello", Actor.person(ALICE)),
        CreatePerson("alice", "Alice again", None),
        RedeemLinkCode("no-such-code", parse_identity("web:example.com:a-1")),
        RedactMemory("concierge", "no-such-entry", "operator", None),
        DeleteEndpoint(EndpointId("no-such-endpoint")),
        SayFromSlack(thread, delivery, STRANGER, "hello", "1.1"),
    ]
    before = await _stored(database)
    with caplog.at_level(logging.INFO, logger="core.storage.writer"):
        alone = [await _all_at_once(database, [command]) for command in bad]
        together = await _all_at_once(database, bad)
    for result in [*(r[0] for r in alone), *together]:
        assert isinstance(result, RolecallError), result
    assert await _stored(database) == before
    assert "after writing" not in caplog.text and "redoing" not in caplog.text
