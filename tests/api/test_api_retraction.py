"""Retracting one's own message over HTTP: once, by its author; the message stays, marked."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api

ALICE, SUPPORT = "person:alice", "role:support"


@pytest.fixture
async def thread_id(api: Api) -> str:
    thread = await api.thread(ALICE, SUPPORT)
    return str(thread["id"])


def retract_path(thread_id: str, message_id: str) -> str:
    return f"/api/v1/threads/{thread_id}/messages/{message_id}/retract"


async def test_retracting_returns_201_with_the_retraction_event(api: Api, thread_id: str) -> None:
    message = await api.say(thread_id, SUPPORT, "wrong answer")

    reply = await api.post(
        retract_path(thread_id, message["id"]), {"author": SUPPORT, "reason": "mistaken"}
    )

    assert reply.status == 201
    event = reply.body
    assert set(event) == {
        "id", "thread_id", "seq", "position", "at", "kind", "author", "target", "reason",
    }  # fmt: skip
    assert (event["kind"], event["author"]) == ("retraction", SUPPORT)
    assert (event["target"], event["reason"]) == (message["id"], "mistaken")
    assert event["seq"] == message["seq"] + 1


async def test_the_retracted_message_stays_on_the_timeline_marked_retracted(
    api: Api, thread_id: str
) -> None:
    message = await api.say(thread_id, SUPPORT, "wrong answer")
    kept = await api.say(thread_id, ALICE, "thanks")
    await api.post(retract_path(thread_id, message["id"]), {"author": SUPPORT})

    events = (await api.timeline(thread_id))["events"]

    assert [e["kind"] for e in events] == ["message", "message", "retraction"]
    assert events[0] == message | {"retracted": True}
    assert events[1] == kept
    assert events[2]["reason"] is None


async def test_only_the_author_may_retract_403(api: Api, thread_id: str) -> None:
    message = await api.say(thread_id, SUPPORT, "hi")

    reply = await api.post(retract_path(thread_id, message["id"]), {"author": ALICE})

    reply.error(403, "not_the_author")


async def test_retracting_twice_is_409(api: Api, thread_id: str) -> None:
    message = await api.say(thread_id, SUPPORT, "hi")
    path = retract_path(thread_id, message["id"])
    assert (await api.post(path, {"author": SUPPORT})).status == 201

    (await api.post(path, {"author": SUPPORT})).error(409, "already_retracted")


async def test_retracting_an_unknown_message_is_404(api: Api, thread_id: str) -> None:
    reply = await api.post(retract_path(thread_id, "no-such-message"), {"author": SUPPORT})

    reply.error(404)


async def test_a_state_change_is_not_a_message_and_cannot_be_retracted_404(
    api: Api, thread_id: str
) -> None:
    change = await api.set_state(thread_id, ALICE, "removed")

    reply = await api.post(retract_path(thread_id, change["id"]), {"author": ALICE})

    reply.error(404)


async def test_a_removed_author_cannot_retract_403(api: Api, thread_id: str) -> None:
    message = await api.say(thread_id, ALICE, "hi")
    await api.set_state(thread_id, ALICE, "removed")

    reply = await api.post(retract_path(thread_id, message["id"]), {"author": ALICE})

    reply.error(403, "participant_removed")


async def test_bad_retraction_bodies_are_rejected_naming_the_field(
    api: Api, thread_id: str
) -> None:
    message = await api.say(thread_id, SUPPORT, "hi")
    path = retract_path(thread_id, message["id"])

    assert (await api.post(path, {})).error(422, "missing_field")
    assert "'because'" in (await api.post(path, {"author": SUPPORT, "because": "x"})).error(422)
    assert (await api.post(path, {"author": SUPPORT, "reason": 3})).error(422).startswith("reason:")
    (await api.post(path, {"author": SUPPORT, "reason": "x" * 1001})).error(413, "reason_too_long")
    assert (await api.timeline(thread_id))["events"][0]["retracted"] is False
