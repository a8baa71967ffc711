"""The Slack outbox, on every backend: the first intent to post an event says it is new, any
later one (a retry, a restart, another replica) that an earlier attempt may have posted; the
record of the post's ts, or giving the post up, clears the intent; intents are per role."""

from __future__ import annotations

from core.model.timeline import EventId
from core.storage.database import Database
from core.storage.slack_store import PostedToSlack

ROLE = "concierge"
EVENT = EventId("0" * 31 + "1")
OTHER = EventId("0" * 31 + "2")


async def test_an_intent_is_new_once_until_its_post_is_recorded(database: Database) -> None:
    slack = database.slack
    assert await slack.intend(ROLE, EVENT, "D1") is True
    assert await slack.intend(ROLE, EVENT, "D1") is False  # an earlier attempt may have posted
    assert await slack.intend("another-role", EVENT, "D1") is True  # each role its own
    assert await slack.intents(ROLE) == [EVENT]

    await slack.posted(PostedToSlack(ROLE, EVENT, "D1", "1700000000.000200", None))
    assert await slack.intents(ROLE) == []
    assert (await slack.post_of(ROLE, EVENT)) is not None
    assert await slack.intents("another-role") == [EVENT]


async def test_giving_a_post_up_clears_its_intent(database: Database) -> None:
    slack = database.slack
    assert await slack.intend(ROLE, OTHER, "D1") is True
    await slack.give_up(ROLE, OTHER)
    assert await slack.intents(ROLE) == []
    assert await slack.post_of(ROLE, OTHER) is None
    assert await slack.intend(ROLE, OTHER, "D1") is True  # nothing left of it
