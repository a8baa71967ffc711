"""A role's memory over HTTP, on SQLite and PostgreSQL: an entry older versions stored with
values storage cannot read never fails a recall through the tools; an operator lists a role's
memory and redacts an entry, after which no conversation recalls it; every bad request is a
4xx in the one error shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.model.values import check_value
from gateway.settings import Settings
from tests.api.conftest import Api
from tests.old_memory import insert_raw, old_payloads
from tests.settings import make_settings
from tests.waiting import eventually

ROLE = "echo"


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """The gateway of `gateway`, on each backend."""
    return make_settings(tmp_path, database_url=database_url)


async def _conversation(api: Api, person: str) -> tuple[str, str]:
    """A conversation of `person` with echo whose run exists: (thread id, run token)."""
    thread = (await api.thread(person, f"role:{ROLE}"))["id"]
    await api.say(thread, person, "hello")

    async def runs() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return found

    [run] = await eventually(runs)
    minted = await api.post(f"/api/v1/runs/{run['id']}/token")
    assert minted.status == 201, minted.text
    return thread, minted.body["token"]


async def _store(api: Api, token: str, payload: dict[str, Any]) -> str:
    stored = await api.post("/api/v1/tools/store", {"payload": payload}, token=token)
    assert stored.status == 200, stored.text
    entry_id: str = stored.body["result"]["id"]
    return entry_id


async def _recall(api: Api, token: str, **arguments: Any) -> list[dict[str, Any]]:
    reply = await api.post("/api/v1/tools/recall", arguments, token=token)
    assert reply.status == 200, reply.text
    entries: list[dict[str, Any]] = reply.body["result"]["entries"]
    return entries


async def _listing(api: Api, query: str = "") -> dict[str, Any]:
    reply = await api.get(f"/api/v1/roles/{ROLE}/memory{query}")
    assert reply.status == 200, reply.text
    page: dict[str, Any] = reply.body
    return page


async def test_old_entries_storage_cannot_read_never_fail_a_recall_over_the_tools(
    gateway: Api, database_url: str
) -> None:
    """Entries written as older versions wrote them (shared, so every conversation of the role
    sees them): filtered and unfiltered recalls answer 200 in every conversation, each payload
    acceptable; the operator's listing marks the mended ones `cleaned`."""
    _, ann = await _conversation(gateway, "person:ann")
    _, bob = await _conversation(gateway, "person:bob")
    await _store(gateway, ann, {"kind": "note", "text": "fresh"})
    if database_url.startswith("sqlite"):
        poison = old_payloads("sqlite")
    else:  # what `jsonb` still takes from a raw write: a number past 64 bits
        poison = {"huge": {"kind": "note", "text": "huge", "x": 10**400}}
    await insert_raw(database_url, poison, role=ROLE)

    for token in (ann, bob):
        for arguments in ({"where": {"kind": "note"}}, {}, {"query": "note"}, {"limit": 100}):
            for entry in await _recall(gateway, token, **arguments):
                check_value(entry["payload"], "payload")
        notes = await _recall(gateway, token, where={"kind": "note"}, limit=100)
        assert "huge" in [e["payload"]["text"] for e in notes]
    assert [e["payload"]["text"] for e in await _recall(gateway, ann, query="fresh")] == ["fresh"]

    listed = (await _listing(gateway))["entries"]
    assert {e["payload"]["text"] for e in listed} == {"fresh", *poison}
    assert {e["payload"]["text"] for e in listed if e["cleaned"]} == set(poison) - {"good"}


async def test_an_operator_finds_an_entry_and_redacts_it_for_every_conversation(
    gateway: Api,
) -> None:
    thread, ann = await _conversation(gateway, "person:ann")
    _, bob = await _conversation(gateway, "person:bob")
    shared = await gateway.call(
        "PATCH", f"/api/v1/threads/{thread}", json={"memory_policy": {"thread_only": False}}
    )
    assert shared.status == 200, shared.text
    bad = await _store(gateway, ann, {"kind": "note", "text": "the office is closed forever"})
    good = await _store(gateway, ann, {"kind": "note", "text": "the office opens at nine"})

    listed = (await _listing(gateway))["entries"]
    assert [(e["id"], e["redacted"], e["thread_id"]) for e in listed] == [
        (bad, None, thread),
        (good, None, thread),
    ]
    assert listed[0]["payload"] == {"kind": "note", "text": "the office is closed forever"}
    assert listed[0]["thread_only"] is False and listed[0]["cleaned"] is False
    assert [e["id"] for e in await _recall(gateway, bob, query="office")] == [good, bad]

    redacted = await gateway.post(
        f"/api/v1/roles/{ROLE}/memory/{bad}/redact", {"reason": "wrong, and shared"}
    )
    assert redacted.status == 201, redacted.text
    assert redacted.body["id"] == bad
    assert redacted.body["redacted"]["by"] == "operator"
    assert redacted.body["redacted"]["reason"] == "wrong, and shared"

    for token in (ann, bob):
        exact = {"query": "office", "where": {"text": listed[0]["payload"]["text"]}}
        for arguments in ({}, {"query": "closed"}, {"where": {"kind": "note"}}, exact):
            assert bad not in [e["id"] for e in await _recall(gateway, token, **arguments)]
        assert [e["id"] for e in await _recall(gateway, token, query="office")] == [good]

    listed = (await _listing(gateway))["entries"]
    assert [e["id"] for e in listed] == [bad, good]
    assert listed[0]["redacted"] == redacted.body["redacted"] and listed[1]["redacted"] is None

    again = await gateway.post(f"/api/v1/roles/{ROLE}/memory/{bad}/redact")
    assert "redacted already" in again.error(409, "already_redacted")
    assert (await _listing(gateway))["entries"][0]["redacted"] == redacted.body["redacted"]


async def test_the_listing_pages_by_entry_id_and_filters_by_thread(gateway: Api) -> None:
    ann_thread, ann = await _conversation(gateway, "person:ann")
    _, bob = await _conversation(gateway, "person:bob")
    ids = [await _store(gateway, ann, {"n": n}) for n in range(3)]
    theirs = await _store(gateway, bob, {"n": 3})

    first = await _listing(gateway, "?limit=2")
    assert [e["id"] for e in first["entries"]] == ids[:2] and first["next"] == ids[1]
    rest = await _listing(gateway, f"?limit=2&after={first['next']}")
    assert [e["id"] for e in rest["entries"]] == [ids[2], theirs] and rest["next"] is None
    only_ann = await _listing(gateway, f"?thread={ann_thread}")
    assert [e["id"] for e in only_ann["entries"]] == ids and only_ann["next"] is None


async def test_memory_routes_answer_bad_requests_in_the_error_shape(gateway: Api) -> None:
    _, ann = await _conversation(gateway, "person:ann")
    entry = await _store(gateway, ann, {"text": "x"})
    memory = f"/api/v1/roles/{ROLE}/memory"

    (await gateway.get("/api/v1/roles/nobody/memory")).error(404, "role_not_found")
    nul = await gateway.get("/api/v1/roles/no%00body/memory")  # the edge may refuse it first
    nul.error(nul.status, "role_not_found" if nul.status == 404 else "nul_character")
    (await gateway.post(f"/api/v1/roles/slow/memory/{entry}/redact")).error(
        404, "memory_entry_not_found"
    )  # a role served here, but not the entry's
    for missing in ("0" * 32, "nope"):
        (await gateway.post(f"{memory}/{missing}/redact")).error(404, "memory_entry_not_found")
    nul = await gateway.post(f"{memory}/a%00b/redact")
    nul.error(nul.status, "memory_entry_not_found" if nul.status == 404 else "nul_character")
    (await gateway.post(f"{memory}/{entry}/redact", {"why": "x"})).error(422, "unknown_field")
    (await gateway.post(f"{memory}/{entry}/redact", {"reason": 5})).error(422, "invalid_reason")
    (await gateway.post(f"{memory}/{entry}/redact", {"reason": "a\x00"})).error(422)
    (await gateway.post(f"{memory}/{entry}/redact", {"reason": "x" * 1001})).error(413)
    (await gateway.get(f"{memory}?role=echo")).error(422, "unknown_parameter")
    for query in ("after=nope", "thread=x", "limit=0", "limit=501"):
        (await gateway.get(f"{memory}?{query}")).error(422, "invalid_parameter")
    (await gateway.get(memory, token=None)).error(401)
    (await gateway.post(f"{memory}/{entry}/redact", token=ann)).error(401)
    assert [e["redacted"] for e in (await _listing(gateway))["entries"]] == [None]


async def test_a_role_no_longer_served_keeps_memory_an_operator_can_redact(
    gateway: Api, database_url: str
) -> None:
    [entry] = await insert_raw(database_url, {"x": {"text": "left behind"}}, role="retired")
    listed = await gateway.get("/api/v1/roles/retired/memory")
    assert listed.status == 200, listed.text
    assert [e["id"] for e in listed.body["entries"]] == [entry]
    redacted = await gateway.post(f"/api/v1/roles/retired/memory/{entry}/redact")
    assert redacted.status == 201, redacted.text
    assert redacted.body["redacted"]["reason"] is None
