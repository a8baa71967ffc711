"""Outbound endpoints as stored, on every backend: a new endpoint starts at the head of both
streams (or where it is told); an attempt is recorded only against the cursors the worker last
stored (a late answer never undoes a replay); replay moves the cursors and re-activates; the
task-event stream reads in position order across tasks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.model.endpoints import (
    Attempt,
    Cursors,
    EndpointId,
    EndpointStatus,
    Filters,
    Standing,
    Tried,
)
from core.model.errors import InvalidInput, NotFound
from core.model.participants import ParticipantSet, parse_address
from core.model.tasks import Actor
from core.storage import endpoints_store
from core.storage.database import Database

ANN = parse_address("person:ann")
SECRET = "whsec_" + "A" * 43 + "="
LATER = datetime(2030, 1, 1, tzinfo=UTC)


async def _say(db: Database, n: int) -> list[int]:
    thread, _ = await db.threads.resolve(ParticipantSet.of([ANN, "person:bo"]))
    return [(await db.threads.post_message(thread.id, ANN, f"m{i}")).position for i in range(n)]


async def _task(db: Database) -> int:
    _, event = await db.tasks.create(
        title="T", body="", assignee=None, external=None, actor=Actor.person(ANN)
    )
    return event.position


async def test_a_new_endpoint_starts_at_the_head_of_both_streams(database: Database) -> None:
    positions = await _say(database, 3)
    task_position = await _task(database)
    filters = Filters(kinds=frozenset({"message", "task"}), roles=frozenset({"ops"}))
    made = await database.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=filters
    )
    assert made.cursors == Cursors(position=positions[-1], task_position=task_position)
    assert made.status is EndpointStatus.ACTIVE and made.standing.failures == 0
    assert made.filters == filters and made.secret == SECRET
    again = await database.endpoints.get(made.id)
    assert again == made
    assert made.to_json()["kinds"] == ["message", "task"]
    assert "secret" not in made.to_json()

    told = await database.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=Filters(), start=2, task_start=1
    )
    assert told.cursors == Cursors(position=1, task_position=0)
    assert [e.id for e in await database.endpoints.all()] == [made.id, told.id]
    with pytest.raises(InvalidInput) as caught:
        await database.endpoints.create(
            url="https://x.example/h", secret=SECRET, filters=Filters(), start=positions[-1] + 2
        )
    assert caught.value.code == "invalid_position"


async def test_an_attempt_is_recorded_only_against_the_cursors_last_stored(
    database: Database,
) -> None:
    positions = await _say(database, 2)
    made = await database.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=Filters(), start=1
    )
    seen = made.cursors
    failing = Standing(
        status=EndpointStatus.ACTIVE, failures=1, reason="attempt 1 failed", next_attempt_at=LATER
    )
    assert await database.endpoints.record(made.id, seen=seen, cursors=seen, standing=failing)
    stored = await database.endpoints.get(made.id)
    assert stored.standing == failing

    delivered = Cursors(position=positions[0], task_position=seen.task_position)
    ok = Standing(status=EndpointStatus.ACTIVE)
    assert await database.endpoints.record(made.id, seen=seen, cursors=delivered, standing=ok)
    # The same answer again (a worker that did not know it was recorded): refused.
    assert not await database.endpoints.record(made.id, seen=seen, cursors=delivered, standing=ok)
    stored = await database.endpoints.get(made.id)
    assert stored.cursors == delivered and stored.standing == ok

    parked = Standing(status=EndpointStatus.PARKED, failures=10, reason="parked after 10")
    assert await database.endpoints.record(
        made.id, seen=delivered, cursors=delivered, standing=parked
    )
    # A parked endpoint takes no more attempts until it is replayed.
    assert not await database.endpoints.record(
        made.id, seen=delivered, cursors=delivered, standing=ok
    )


async def test_replay_moves_the_cursors_and_reactivates(database: Database) -> None:
    positions = await _say(database, 3)
    task_position = await _task(database)
    made = await database.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=Filters()
    )
    parked = Standing(status=EndpointStatus.PARKED, failures=10, reason="parked after 10")
    await database.endpoints.record(
        made.id, seen=made.cursors, cursors=made.cursors, standing=parked
    )

    resumed = await database.endpoints.replay(made.id)
    assert resumed.status is EndpointStatus.ACTIVE
    assert resumed.standing == Standing(status=EndpointStatus.ACTIVE)
    assert resumed.cursors == made.cursors  # nothing moved: it goes on where it stopped

    back = await database.endpoints.replay(made.id, start=positions[1], task_start=task_position)
    assert back.cursors == Cursors(position=positions[0], task_position=task_position - 1)
    with pytest.raises(InvalidInput):
        await database.endpoints.replay(made.id, start=positions[-1] + 5)
    with pytest.raises(NotFound) as caught:
        await database.endpoints.replay(EndpointId("nope"))
    assert caught.value.code == "endpoint_not_found"


async def test_a_deleted_endpoint_is_gone(database: Database) -> None:
    made = await database.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=Filters()
    )
    assert (await database.endpoints.delete(made.id)).id == made.id
    with pytest.raises(NotFound):
        await database.endpoints.get(made.id)
    with pytest.raises(NotFound):
        await database.endpoints.delete(made.id)
    assert not await database.endpoints.record(
        made.id, seen=made.cursors, cursors=made.cursors, standing=made.standing
    )


async def test_task_events_read_in_position_order_across_tasks(database: Database) -> None:
    first = await _task(database)
    second = await _task(database)
    task, _ = (await database.tasks.list())[0], None
    comment = await database.tasks.comment(task.id, "hello", Actor.person(ANN))
    events = await database.endpoints.task_events_since(0, limit=10)
    assert [e.position for e in events] == [first, second, comment.position]
    assert [e.kind.value for e in events] == ["created", "created", "commented"]
    assert [e.position for e in await database.endpoints.task_events_since(first, limit=1)] == [
        second
    ]


async def test_recorded_attempts_make_the_delivery_log_and_only_the_newest_are_kept(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoints_store, "KEPT_ATTEMPTS", 3)
    positions = await _say(database, 2)
    made = await database.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=Filters(), start=1
    )
    seen = made.cursors
    for n in range(1, 5):
        failing = Standing(status=EndpointStatus.ACTIVE, failures=n, reason=f"attempt {n}")
        tried = Tried(event_id=f"{n:032x}", event_type="timeline.message",
                      position=positions[0], attempt=Attempt(status=500))  # fmt: skip
        assert await database.endpoints.record(
            made.id, seen=seen, cursors=seen, standing=failing, tried=tried
        )
    # An attempt the row no longer takes (a late answer after a replay, say) is not logged.
    late = Tried(event_id="f" * 32, event_type="timeline.message", position=positions[0],
                 attempt=Attempt(status=200))  # fmt: skip
    moved = Cursors(position=positions[0], task_position=seen.task_position)
    assert not await database.endpoints.record(
        made.id, seen=moved, cursors=moved, standing=Standing(status=EndpointStatus.ACTIVE),
        tried=late,
    )  # fmt: skip

    logged, more = await database.endpoints.deliveries(made.id)
    assert [(d.seq, d.failures, d.outcome) for d in logged] == [
        (4, 4, "HTTP 500"), (3, 3, "HTTP 500"), (2, 2, "HTTP 500"),
    ]  # fmt: skip
    assert not more
    _, ahead = await database.endpoints.with_backlog(made.id)
    assert ahead.last_failure == logged[0] and ahead.events == 2
    await database.endpoints.delete(made.id)  # its log goes with it
    with pytest.raises(NotFound):
        await database.endpoints.deliveries(made.id)
