"""Posting messages over HTTP: who may post, what text is accepted, what comes back."""

from __future__ import annotations

import re

import pytest

from tests.api.conftest import Api

ALICE, BOB, SUPPORT = "person:alice", "person:bob", "role:support"
RFC3339_MICROS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@pytest.fixture
async def thread_id(api: Api) -> str:
    thread = await api.thread(ALICE, SUPPORT)
    return str(thread["id"])


async def test_posting_a_message_returns_201_with_the_whole_event(api: Api, thread_id: str) -> None:
    reply = await api.post(
        f"/api/v1/threads/{thread_id}/messages", {"author": ALICE, "text": "hello"}
    )

    assert reply.status == 201
    event = reply.body
    assert set(event) == {
        "id", "thread_id", "seq", "position", "at", "kind",
        "author", "text", "context", "retracted", "channel", "in_reply_to", "erased",
    }  # fmt: skip
    assert event["thread_id"] == thread_id
    assert (event["kind"], event["author"], event["text"]) == ("message", ALICE, "hello")
    assert (event["seq"], event["context"], event["retracted"]) == (1, None, False)
    assert event["channel"] == "api"  # written through the API unless it says otherwise
    assert event["in_reply_to"] is None  # a person's message answers no turn
    assert event["erased"] is False  # (true only for a tombstone: erased with a person)
    assert event["position"] >= 1
    assert RFC3339_MICROS.fullmatch(event["at"])


async def test_a_message_says_which_channel_it_was_written_in(api: Api, thread_id: str) -> None:
    said = await api.post(
        f"/api/v1/threads/{thread_id}/messages",
        {"author": ALICE, "text": "from slack", "channel": "slack"},
    )
    assert said.status == 201 and said.body["channel"] == "slack"
    page = await api.timeline(thread_id, f"?as={ALICE}")
    assert [e["channel"] for e in page["events"] if e["kind"] == "message"] == ["slack"]
    bad = await api.post(
        f"/api/v1/threads/{thread_id}/messages",
        {"author": ALICE, "text": "x", "channel": "Not A Channel"},
    )
    assert "channel" in bad.error(422, "invalid_channel")


async def test_seq_counts_up_per_thread_and_position_across_threads(
    api: Api, thread_id: str
) -> None:
    other = (await api.thread(BOB, SUPPORT))["id"]

    first = await api.say(thread_id, ALICE, "one")
    elsewhere = await api.say(other, BOB, "hi")
    second = await api.say(thread_id, SUPPORT, "two")

    assert (first["seq"], elsewhere["seq"], second["seq"]) == (1, 1, 2)
    assert first["position"] < elsewhere["position"] < second["position"]


async def test_an_initiative_message_keeps_its_context_hint(api: Api, thread_id: str) -> None:
    context = {"kind": "follow_up", "task": "T-1", "originating_message": "m-9"}

    reply = await api.post(
        f"/api/v1/threads/{thread_id}/messages",
        {"author": SUPPORT, "text": "any news?", "context": context},
    )

    assert reply.status == 201
    assert reply.body["context"] == context
    timeline = await api.timeline(thread_id)
    assert timeline["events"][0]["context"] == context


async def test_a_null_context_is_the_same_as_none(api: Api, thread_id: str) -> None:
    reply = await api.post(
        f"/api/v1/threads/{thread_id}/messages",
        {"author": ALICE, "text": "hi", "context": None},
    )

    assert reply.status == 201
    assert reply.body["context"] is None


async def test_a_malformed_context_is_422(api: Api, thread_id: str) -> None:
    for context in ["x", {"task": "T-1"}, {"kind": ""}, {"kind": "k", "extra": 1}, {"kind": 3}]:
        reply = await api.post(
            f"/api/v1/threads/{thread_id}/messages",
            {"author": ALICE, "text": "hi", "context": context},
        )
        assert reply.error(422, "invalid_context").startswith("context:")


async def test_an_author_who_is_not_a_member_is_403(api: Api, thread_id: str) -> None:
    reply = await api.post(f"/api/v1/threads/{thread_id}/messages", {"author": BOB, "text": "hi"})

    reply.error(403, "not_a_member")


async def test_a_removed_author_is_403_until_re_added(api: Api, thread_id: str) -> None:
    await api.set_state(thread_id, ALICE, "removed")
    path = f"/api/v1/threads/{thread_id}/messages"

    (await api.post(path, {"author": ALICE, "text": "hi"})).error(403, "participant_removed")

    await api.set_state(thread_id, ALICE, "active")
    assert (await api.post(path, {"author": ALICE, "text": "back"})).status == 201


async def test_empty_or_blank_text_is_422(api: Api, thread_id: str) -> None:
    for text in ["", "   ", "\n\t"]:
        reply = await api.post(
            f"/api/v1/threads/{thread_id}/messages", {"author": ALICE, "text": text}
        )
        assert reply.error(422, "empty_text").startswith("text:")


async def test_text_of_exactly_40000_characters_is_accepted_whole(api: Api, thread_id: str) -> None:
    text = "é" * 39_999 + "!"

    reply = await api.post(f"/api/v1/threads/{thread_id}/messages", {"author": ALICE, "text": text})

    assert reply.status == 201
    assert reply.body["text"] == text
    assert (await api.timeline(thread_id))["events"][0]["text"] == text


async def test_text_of_40001_characters_is_413_and_not_stored(api: Api, thread_id: str) -> None:
    reply = await api.post(
        f"/api/v1/threads/{thread_id}/messages", {"author": ALICE, "text": "x" * 40_001}
    )

    reply.error(413, "text_too_long")
    assert (await api.timeline(thread_id))["events"] == []


async def test_fields_of_the_wrong_type_are_422_naming_the_field(api: Api, thread_id: str) -> None:
    path = f"/api/v1/threads/{thread_id}/messages"

    assert (await api.post(path, {"author": ALICE, "text": 5})).error(422).startswith("text:")
    assert (await api.post(path, {"author": ALICE, "text": None})).error(422).startswith("text:")
    assert (await api.post(path, {"author": [ALICE], "text": "x"})).error(422).startswith("author:")


async def test_a_missing_field_is_422_naming_it(api: Api, thread_id: str) -> None:
    path = f"/api/v1/threads/{thread_id}/messages"

    assert "'text'" in (await api.post(path, {"author": ALICE})).error(422, "missing_field")
    assert "'author'" in (await api.post(path, {"text": "hi"})).error(422, "missing_field")


async def test_an_unknown_field_is_422_naming_it_and_nothing_is_posted(
    api: Api, thread_id: str
) -> None:
    reply = await api.post(
        f"/api/v1/threads/{thread_id}/messages", {"author": ALICE, "text": "hi", "txet": "typo"}
    )

    assert "'txet'" in reply.error(422, "unknown_field")
    assert (await api.timeline(thread_id))["events"] == []


async def test_posting_to_an_unknown_thread_is_404(api: Api) -> None:
    reply = await api.post("/api/v1/threads/nope/messages", {"author": ALICE, "text": "hi"})

    reply.error(404)
