"""Task storage on every backend: changes and comments append task events with gap-free `seq`
and increasing positions, even when many land at once."""

from __future__ import annotations

import asyncio

import pytest

from core.model.errors import Conflict, NotFound
from core.model.participants import Address
from core.model.tasks import Actor, ExternalRef, TaskChange, TaskId, TaskStatus
from core.storage.database import Database

ANN = Actor.person(Address("person:ann"))


async def test_concurrent_comments_get_one_seq_each_in_position_order(database: Database) -> None:
    task, created = await database.tasks.create(
        title="t", body="", assignee=None, external=None, actor=ANN
    )
    await asyncio.gather(*(database.tasks.comment(task.id, f"c{i}", ANN) for i in range(20)))
    _, event = await database.tasks.update(task.id, TaskChange(status=TaskStatus.IN_PROGRESS), ANN)

    after, history = await database.tasks.get(task.id)
    assert [e.seq for e in history] == list(range(1, 23))
    assert [e.position for e in history] == sorted(e.position for e in history)
    assert after.events == 22 and after.status is TaskStatus.IN_PROGRESS
    assert event is not None and event.changes == {"status": {"from": "open", "to": "in_progress"}}
    assert created.seq == 1


async def test_an_external_reference_names_one_task(database: Database) -> None:
    ref = ExternalRef(source="github", key="acme/app#7", url="https://example.test/7")
    task, _ = await database.tasks.create(title="t", body="", assignee="echo", external=ref,
                                          actor=ANN)  # fmt: skip
    assert task.external == ref
    with pytest.raises(Conflict):
        await database.tasks.create(title="u", body="", assignee=None, external=ref, actor=ANN)
    with pytest.raises(NotFound):
        await database.tasks.comment(TaskId("nope"), "x", ANN)
