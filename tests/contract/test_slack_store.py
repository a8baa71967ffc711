"""What the Slack channel keeps, on every backend: a delivery is handled once however often Slack
retries it; an edit becomes a new message that says what it replaces, and the Slack message
stands for it from then on; a deletion retracts what the Slack message stands for; a post's ts
and the delivery cursor are recorded together; a DM is rebound when its person changes."""

from __future__ import annotations

import pytest

from core.model.errors import NotAllowed
from core.model.membership import ParticipantState
from core.model.participants import Address, ParticipantSet, parse_address
from core.model.timeline import Message, Retraction, ThreadId
from core.storage.database import Database
from core.storage.slack_store import (
    PostedToSlack,
    RetractFromSlack,
    SayFromSlack,
    SlackBinding,
    SlackDelivery,
)

ROLE = "concierge"
ANN = parse_address("person:ann")


async def _dm(db: Database) -> ThreadId:
    thread, _ = await db.threads.resolve(ParticipantSet.of([ANN, "role:concierge"]))
    return thread.id


def _delivery(event_id: str) -> SlackDelivery:
    return SlackDelivery(event_id=event_id, role=ROLE, team_id="T1", channel_id="D1")


async def _messages(db: Database, thread: ThreadId) -> list[Message]:
    page = await db.threads.timeline(thread)
    return [e for e in page.events if isinstance(e, Message)]


async def test_a_delivery_is_recorded_once_however_often_it_comes(database: Database) -> None:
    thread = await _dm(database)
    said = SayFromSlack(thread, _delivery("Ev1"), ANN, "hello", "100.1")
    first = await database.slack.say(said)
    assert isinstance(first, Message) and first.channel == "slack"
    assert await database.slack.say(said) is None  # Slack's retry
    assert [m.text for m in await _messages(database, thread)] == ["hello"]
    assert await database.slack.delivered("Ev1")
    post = await database.slack.post_of(ROLE, first.id)
    assert post is not None and (post.ts, post.outbound) == ("100.1", False)
    [binding] = await database.slack.bindings(ROLE)
    assert binding == SlackBinding("T1", "D1", thread)


async def test_an_edit_replaces_and_a_deletion_retracts_the_latest_version(
    database: Database,
) -> None:
    thread = await _dm(database)
    original = await database.slack.say(SayFromSlack(thread, _delivery("Ev1"), ANN, "helo", "1.1"))
    edit = SayFromSlack(thread, _delivery("Ev2"), ANN, "hello", "1.1", replaces="1.1")
    edited = await database.slack.say(edit)
    assert isinstance(original, Message) and isinstance(edited, Message)
    assert edited.context is not None and edited.context.kind == "replaces"
    assert edited.context.originating_message == original.id
    post = await database.slack.post_of(ROLE, edited.id)
    assert post is not None and post.ts == "1.1"
    assert await database.slack.post_of(ROLE, original.id) is None

    gone = await database.slack.retract(RetractFromSlack(thread, _delivery("Ev3"), ANN, "1.1"))
    assert isinstance(gone, Retraction) and gone.target == edited.id
    assert (
        await database.slack.retract(RetractFromSlack(thread, _delivery("Ev3"), ANN, "1.1")) is None
    )
    unknown = RetractFromSlack(thread, _delivery("Ev4"), ANN, "9.9")
    assert await database.slack.retract(unknown) is None


async def test_a_post_and_the_cursor_past_it_are_recorded_together(database: Database) -> None:
    thread = await _dm(database)
    reply = await database.threads.post_message(thread, parse_address("role:concierge"), "hi")
    assert await database.slack.cursor(ROLE) is None
    posted = PostedToSlack(ROLE, reply.id, "D1", "2.2", "1.1", reply.position)
    await database.slack.posted(posted)
    assert await database.slack.cursor(ROLE) == reply.position
    post = await database.slack.post_of(ROLE, reply.id)
    assert post is not None and (post.ts, post.thread_ts, post.outbound) == ("2.2", "1.1", True)
    await database.slack.advance(ROLE, reply.position - 1)  # never backwards
    assert await database.slack.cursor(ROLE) == reply.position


async def test_a_dm_is_rebound_when_it_becomes_another_conversation(database: Database) -> None:
    first = await _dm(database)
    other, _ = await database.threads.resolve(ParticipantSet.of(["person:bo", "role:concierge"]))
    bound = await database.slack.bind(ROLE, SlackBinding("T1", "D1", first))
    assert bound.since == await database.threads.head()
    await database.threads.post_message(other.id, Address("person:bo"), "said before", None)
    again = await database.slack.bind(ROLE, SlackBinding("T1", "D1", first))
    assert again.since == bound.since  # the same conversation: it keeps its start
    rebound = await database.slack.bind(ROLE, SlackBinding("T1", "D1", other.id))
    assert rebound.since == await database.threads.head() > bound.since
    [stored] = await database.slack.bindings(ROLE)
    assert stored == SlackBinding("T1", "D1", other.id) and stored.since == rebound.since


async def test_a_refused_message_leaves_no_record_of_its_delivery(database: Database) -> None:
    thread = await _dm(database)
    await database.threads.set_participant_state(thread, ANN, ParticipantState.REMOVED)
    said = SayFromSlack(thread, _delivery("Ev9"), ANN, "let me in", "9.1")
    with pytest.raises(NotAllowed):
        await database.slack.say(said)
    assert not await database.slack.delivered("Ev9")  # a retry after a re-add is not a repeat
    await database.threads.set_participant_state(thread, ANN, ParticipantState.ACTIVE)
    assert isinstance(await database.slack.say(said), Message)
