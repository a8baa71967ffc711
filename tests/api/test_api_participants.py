"""Removing and re-adding participants over HTTP: the state machine's moves and refusals."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api

ALICE, BOB, SUPPORT = "person:alice", "person:bob", "role:support"


@pytest.fixture
async def thread_id(api: Api) -> str:
    thread = await api.thread(ALICE, BOB, SUPPORT)
    return str(thread["id"])


async def test_removing_a_member_is_200_with_the_state_change_event(
    api: Api, thread_id: str
) -> None:
    reply = await api.post(f"/api/v1/threads/{thread_id}/participants/{BOB}", {"state": "removed"})

    assert reply.status == 200
    event = reply.body
    assert set(event) == {
        "id", "thread_id", "seq", "position", "at", "kind",
        "participant", "from_state", "to_state",
    }  # fmt: skip
    assert event["kind"] == "participant_state_changed"
    assert (event["participant"], event["from_state"], event["to_state"]) == (
        BOB,
        "active",
        "removed",
    )
    assert event["thread_id"] == thread_id


async def test_the_thread_shows_current_states_through_remove_and_re_add(
    api: Api, thread_id: str
) -> None:
    path = f"/api/v1/threads/{thread_id}"

    await api.set_state(thread_id, BOB, "removed")
    removed = (await api.get(path)).body["participants"]
    readded_event = await api.set_state(thread_id, BOB, "active")
    readded = (await api.get(path)).body["participants"]

    assert {"address": BOB, "state": "removed"} in removed
    assert (readded_event["from_state"], readded_event["to_state"]) == ("removed", "active")
    assert {"address": BOB, "state": "active"} in readded


async def test_the_address_in_the_path_is_canonicalised(api: Api, thread_id: str) -> None:
    reply = await api.post(
        f"/api/v1/threads/{thread_id}/participants/Person:Bob", {"state": "removed"}
    )

    assert reply.status == 200
    assert reply.body["participant"] == BOB


async def test_a_never_member_cannot_be_added_409(api: Api, thread_id: str) -> None:
    reply = await api.post(
        f"/api/v1/threads/{thread_id}/participants/person:carol", {"state": "active"}
    )

    message = reply.error(409, "never_a_member")
    assert "resolve" in message


async def test_removing_twice_or_re_adding_an_active_member_is_409(
    api: Api, thread_id: str
) -> None:
    await api.set_state(thread_id, BOB, "removed")
    path = f"/api/v1/threads/{thread_id}/participants/{BOB}"

    (await api.post(path, {"state": "removed"})).error(409, "illegal_state_change")
    await api.set_state(thread_id, BOB, "active")
    (await api.post(path, {"state": "active"})).error(409, "illegal_state_change")


async def test_an_unknown_state_or_malformed_address_is_422(api: Api, thread_id: str) -> None:
    path = f"/api/v1/threads/{thread_id}/participants/{BOB}"

    for state in ["gone", "", None, True, ["removed"]]:
        (await api.post(path, {"state": state})).error(422, "invalid_state")
    (await api.post(path, {})).error(422, "missing_field")
    (await api.post(path, {"state": "removed", "why": "x"})).error(422, "unknown_field")
    bad_address = f"/api/v1/threads/{thread_id}/participants/bob"
    assert (
        (await api.post(bad_address, {"state": "removed"}))
        .error(422, "invalid_address")
        .startswith("participant:")
    )


async def test_changing_a_state_in_an_unknown_thread_is_404(api: Api) -> None:
    reply = await api.post(f"/api/v1/threads/nope/participants/{BOB}", {"state": "removed"})

    reply.error(404)
