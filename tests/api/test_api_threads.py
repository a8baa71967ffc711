"""Resolving, reading and listing threads, and changing their memory policy, over HTTP."""

from __future__ import annotations

import re

from tests.api.conftest import Api

ALICE, BOB, CAROL, SUPPORT = "person:alice", "person:bob", "person:carol", "role:support"
RFC3339_MICROS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


async def test_resolving_a_new_set_creates_the_thread_with_201_and_everyone_active(
    api: Api,
) -> None:
    reply = await api.post("/api/v1/threads", {"participants": [SUPPORT, ALICE]})

    assert reply.status == 201
    thread = reply.body
    assert set(thread) == {"id", "participants", "memory_policy", "created_at"}
    assert thread["participants"] == [
        {"address": ALICE, "state": "active"},
        {"address": SUPPORT, "state": "active"},
    ]
    assert thread["memory_policy"] == {"thread_only": True}
    assert RFC3339_MICROS.fullmatch(thread["created_at"])


async def test_resolving_the_same_set_again_in_any_order_with_duplicates_returns_it_with_200(
    api: Api,
) -> None:
    created = await api.post("/api/v1/threads", {"participants": [ALICE, SUPPORT]})
    again = await api.post(
        "/api/v1/threads", {"participants": [SUPPORT, "Person:Alice", ALICE, SUPPORT]}
    )

    assert (created.status, again.status) == (201, 200)
    assert again.body == created.body


async def test_a_different_set_is_a_different_thread(api: Api) -> None:
    pair = await api.thread(ALICE, SUPPORT)
    group = await api.thread(ALICE, BOB, SUPPORT)

    assert pair["id"] != group["id"]


async def test_fewer_than_two_distinct_participants_is_422(api: Api) -> None:
    for participants in ([ALICE], [ALICE, ALICE, "PERSON:ALICE"], []):
        reply = await api.post("/api/v1/threads", {"participants": participants})
        reply.error(422, "too_few_participants")


async def test_a_malformed_address_is_422_naming_the_field(api: Api) -> None:
    for bad in ["alice", "bot:x", "person:", "person:-x", "person:a b", 7, None]:
        reply = await api.post("/api/v1/threads", {"participants": [ALICE, bad]})
        message = reply.error(422, "invalid_address")
        assert message.startswith("participants:")


async def test_participants_that_are_not_a_list_are_422(api: Api) -> None:
    for participants in ["person:alice,role:support", {"a": ALICE}, None, 2]:
        reply = await api.post("/api/v1/threads", {"participants": participants})
        reply.error(422, "invalid_participants")


async def test_a_thread_is_read_by_its_id(api: Api) -> None:
    thread = await api.thread(ALICE, SUPPORT)

    reply = await api.get(f"/api/v1/threads/{thread['id']}")

    assert reply.status == 200
    assert reply.body == thread


async def test_an_unknown_thread_id_is_404_and_never_creates_a_thread(api: Api) -> None:
    for unknown in ["0" * 32, "no-such-thread", "%20"]:
        reply = await api.get(f"/api/v1/threads/{unknown}")
        reply.error(404)
    listed = await api.get(f"/api/v1/threads?participant={ALICE}")
    assert listed.body == {"threads": [], "next": None}


async def test_listing_a_participants_threads_returns_exactly_theirs(api: Api) -> None:
    first = await api.thread(ALICE, SUPPORT)
    second = await api.thread(ALICE, BOB)
    await api.thread(BOB, CAROL)

    reply = await api.get(f"/api/v1/threads?participant={ALICE}")

    assert reply.status == 200
    assert [t["id"] for t in reply.body["threads"]] == [first["id"], second["id"]]
    assert reply.body["threads"][0] == first


async def test_listing_someone_with_no_threads_is_an_empty_list(api: Api) -> None:
    reply = await api.get(f"/api/v1/threads?participant={CAROL}")

    assert reply.status == 200
    assert reply.body == {"threads": [], "next": None}


async def test_listing_pages_with_after_and_limit(api: Api) -> None:
    made = [(await api.thread(ALICE, f"role:r{i}"))["id"] for i in range(5)]
    seen, query = [], f"/api/v1/threads?participant={ALICE}&limit=2"
    while True:
        reply = await api.get(query)
        assert reply.status == 200
        seen += [t["id"] for t in reply.body["threads"]]
        if reply.body["next"] is None:
            break
        assert len(reply.body["threads"]) == 2
        query = f"/api/v1/threads?participant={ALICE}&limit=2&after={reply.body['next']}"
    assert seen == made
    (await api.get(f"/api/v1/threads?participant={ALICE}&limit=0")).error(422, "invalid_parameter")


async def test_listing_without_a_participant_or_with_a_malformed_one_is_422(api: Api) -> None:
    (await api.get("/api/v1/threads")).error(422, "missing_parameter")
    (await api.get("/api/v1/threads?participant=alice")).error(422, "invalid_address")
    (await api.get(f"/api/v1/threads?participant={ALICE}&x=1")).error(422, "unknown_parameter")
    (await api.get(f"/api/v1/threads?participant={ALICE}&participant={BOB}")).error(
        422, "repeated_parameter"
    )


async def test_patching_the_memory_policy_changes_it_and_returns_the_thread(api: Api) -> None:
    thread = await api.thread(ALICE, SUPPORT)
    path = f"/api/v1/threads/{thread['id']}"

    reply = await api.call("PATCH", path, json={"memory_policy": {"thread_only": False}})

    assert reply.status == 200
    assert reply.body == thread | {"memory_policy": {"thread_only": False}}
    assert (await api.get(path)).body["memory_policy"] == {"thread_only": False}


async def test_patching_with_a_malformed_policy_is_422_and_changes_nothing(api: Api) -> None:
    thread = await api.thread(ALICE, SUPPORT)
    path = f"/api/v1/threads/{thread['id']}"

    for policy in [{"thread_only": "no"}, {}, {"thread_only": True, "x": 1}, True, None]:
        reply = await api.call("PATCH", path, json={"memory_policy": policy})
        assert reply.error(422, "invalid_memory_policy").startswith("memory_policy:")
    (await api.call("PATCH", path, json={})).error(422, "missing_field")
    (await api.call("PATCH", path, json={"name": "x"})).error(422, "unknown_field")
    assert (await api.get(path)).body == thread


async def test_patching_an_unknown_thread_is_404(api: Api) -> None:
    reply = await api.call(
        "PATCH", "/api/v1/threads/nope", json={"memory_policy": {"thread_only": False}}
    )
    reply.error(404)
