"""Inbound deliveries on every backend: each is recorded once with everything it does, in one
transaction; a refused one leaves nothing; subscriptions by external key wait for the item's task
and become subscriptions of it — its creation included — whoever creates it."""

from __future__ import annotations

import pytest

from core.model.errors import InvalidInput
from core.model.participants import Address, ParticipantSet
from core.model.runs.run import Run
from core.model.tasks import Actor, ExternalRef, TaskEventKind, TaskStatus
from core.model.webhooks import Ignored, Source, SourceKind, map_generic, map_github
from core.storage.database import Database

GH = Source(name="gh", kind=SourceKind.GITHUB, secret="GH_SECRET")
TRACKER = Source(name="tracker", kind=SourceKind.STANDARD, secret="TRACKER_SECRET")
ITEM = ExternalRef(source="github", key="acme/app#7")


def comment_event(text: str = "Looks good", **issue: object) -> dict[str, object]:
    fields = {"number": 7, "title": "Door sticks", "body": "", "state": "open"} | issue
    return {
        "action": "created",
        "issue": fields,
        "repository": {"full_name": "acme/app"},
        "comment": {"body": text, "user": {"login": "octocat"}},
    }


async def conversation_run(db: Database, person: str = "person:ann") -> Run:
    thread, _ = await db.threads.resolve(ParticipantSet.of([person, "role:echo"]))
    run, _ = await db.runs.ensure_conversation_run(thread.id, "echo")
    return run


async def test_a_delivery_does_what_it_says_once_however_often_it_comes(database: Database) -> None:
    mapped = map_github(GH, "issue_comment", comment_event())
    first = await database.webhooks.receive("gh", "d-1", mapped)
    assert not first.duplicate and first.task is not None
    assert first.task.external == ExternalRef(source="github", key="acme/app#7")
    assert [e.kind for e in first.events] == [TaskEventKind.CREATED, TaskEventKind.COMMENTED]
    assert {e.actor for e in first.events} == {Actor.source("gh")}
    assert first.events[1].text == "octocat: Looks good"

    again = await database.webhooks.receive("gh", "d-1", mapped)
    assert again.duplicate and again.task is None and not again.events
    _, history = await database.tasks.get(first.task.id)
    assert len(history) == 2
    assert await database.webhooks.delivered("gh", "d-1")
    assert not await database.webhooks.delivered("other-source", "d-1")


async def test_the_next_event_about_the_item_changes_its_task(database: Database) -> None:
    await database.webhooks.receive("gh", "d-1", map_github(GH, "issue_comment", comment_event()))
    closed = {
        "action": "closed",
        "issue": {"number": 7, "title": "Door sticks", "body": "", "state": "closed",
                  "state_reason": "not_planned"},
        "repository": {"full_name": "acme/app"},
    }  # fmt: skip
    got = await database.webhooks.receive("gh", "d-2", map_github(GH, "issues", closed))
    assert got.task is not None and got.task.status is TaskStatus.CANCELLED
    assert [e.changes for e in got.events] == [{"status": {"from": "open", "to": "cancelled"}}]
    [listed] = await database.tasks.list()
    assert listed.id == got.task.id  # one task per item


async def test_an_ignored_delivery_is_recorded_and_does_nothing(database: Database) -> None:
    ping = map_github(GH, "ping", {"zen": "Design for failure."})
    assert isinstance(ping, Ignored)
    got = await database.webhooks.receive("gh", "p-1", ping)
    assert got.ignored and not got.duplicate and got.task is None
    assert (await database.webhooks.receive("gh", "p-1", ping)).duplicate
    assert await database.tasks.list() == []


async def test_a_refused_delivery_leaves_no_record(database: Database) -> None:
    no_title = map_generic(TRACKER, {"key": "INC-1", "status": "done"})
    with pytest.raises(InvalidInput) as refused:
        await database.webhooks.receive("tracker", "w-1", no_title)
    assert refused.value.code == "unknown_item"
    assert not await database.webhooks.delivered("tracker", "w-1")
    fixed = map_generic(TRACKER, {"key": "INC-1", "title": "Printer", "status": "done"})
    got = await database.webhooks.receive("tracker", "w-1", fixed)  # the same id, sent again
    assert got.task is not None and got.task.status is TaskStatus.DONE
    assert [e.kind for e in got.events] == [TaskEventKind.CREATED, TaskEventKind.UPDATED]


async def test_subscribers_by_key_watch_the_task_from_its_creation_by_a_delivery(
    database: Database,
) -> None:
    ann, bob = await conversation_run(database), await conversation_run(database, "person:bob")
    assert await database.subscriptions.subscribe_by_key(ann.id, ITEM) == (None, True)
    assert await database.subscriptions.subscribe_by_key(ann.id, ITEM) == (None, False)
    assert await database.subscriptions.subscribe_by_key(bob.id, ITEM) == (None, True)
    assert await database.subscriptions.of_run_with_waits(ann.id) == ([], [ITEM])
    assert await database.subscriptions.runs_with_news() == []

    got = await database.webhooks.receive(
        "gh", "d-1", map_github(GH, "issue_comment", comment_event())
    )
    assert got.task is not None
    for run in (ann, bob):
        tasks, waits = await database.subscriptions.of_run_with_waits(run.id)
        assert [t.id for t in tasks] == [got.task.id] and waits == []
    # The creation is news to them, and so is the comment.
    assert sorted(await database.subscriptions.runs_with_news()) == sorted(
        [(ann.thread_id, "echo"), (bob.thread_id, "echo")]
    )
    assert await database.subscriptions.subscribe_by_key(ann.id, ITEM) == (got.task.id, False)


async def test_a_task_made_over_the_api_with_the_reference_takes_over_the_waits(
    database: Database,
) -> None:
    ann = await conversation_run(database)
    await database.subscriptions.subscribe_by_key(ann.id, ITEM)
    task, _ = await database.tasks.create(
        title="Door sticks", body="", assignee=None, external=ITEM,
        actor=Actor.person(Address("person:bob")),
    )  # fmt: skip
    assert await database.subscriptions.of_run(ann.id) == [task.id]
    assert await database.subscriptions.runs_with_news() == [(ann.thread_id, "echo")]


async def test_unsubscribing_by_key_drops_the_wait_or_the_subscription(database: Database) -> None:
    ann = await conversation_run(database)
    await database.subscriptions.subscribe_by_key(ann.id, ITEM)
    assert await database.subscriptions.unsubscribe_by_key(ann.id, ITEM) == (None, True)
    assert await database.subscriptions.unsubscribe_by_key(ann.id, ITEM) == (None, False)
    got = await database.webhooks.receive(
        "gh", "d-1", map_github(GH, "issue_comment", comment_event())
    )
    assert got.task is not None
    assert await database.subscriptions.of_run(ann.id) == []  # the wait was gone
    await database.subscriptions.subscribe_by_key(ann.id, ITEM)
    assert await database.subscriptions.unsubscribe_by_key(ann.id, ITEM) == (got.task.id, True)
    assert await database.subscriptions.of_run(ann.id) == []
