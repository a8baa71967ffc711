"""People, identities and link codes over real HTTP: the operator routes, their errors, a merge
seen through the thread API, and a deactivated person's run cut off at its next tool call."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.api.conftest import Api
from tests.waiting import eventually


async def _create(api: Api, display_name: str, **fields: Any) -> dict[str, Any]:
    reply = await api.post("/api/v1/persons", {"display_name": display_name, **fields})
    assert reply.status == 201, reply.text
    person: dict[str, Any] = reply.body
    return person


async def _identity(api: Api, slug: str, identity: str) -> None:
    reply = await api.post(f"/api/v1/persons/{slug}/identities", {"identity": identity})
    assert reply.status == 201, reply.text


async def _code(api: Api, slug: str, **body: Any) -> dict[str, Any]:
    reply = await api.post(f"/api/v1/persons/{slug}/link-codes", body or None)
    assert reply.status == 201, reply.text
    made: dict[str, Any] = reply.body
    return made


async def test_people_are_created_shown_and_listed(api: Api) -> None:
    ann = await _create(api, "Ann Lee", email="ann@example.com")
    assert ann["slug"] == "ann-lee" and ann["address"] == "person:ann-lee"
    assert (ann["state"], ann["active"], ann["identities"]) == ("active", True, [])
    bo = await _create(api, "Bo", slug="Person:Bo")
    assert bo["slug"] == "bo" and bo["email"] is None
    shown = await api.get("/api/v1/persons/ann-lee")
    assert shown.status == 200 and shown.body == ann

    first = await api.get("/api/v1/persons?limit=1")
    assert [p["slug"] for p in first.body["persons"]] == ["ann-lee"]
    assert first.body["next"] == "ann-lee"
    rest = await api.get("/api/v1/persons?after=ann-lee")
    assert [p["slug"] for p in rest.body["persons"]] == ["bo"] and rest.body["next"] is None


async def test_bad_person_requests_get_clear_errors(api: Api) -> None:
    await _create(api, "Ann", slug="ann")
    (await api.post("/api/v1/persons", {"display_name": "Ann", "slug": "ann"})).error(
        409, "person_exists"
    )
    message = (await api.post("/api/v1/persons", {"display_name": ""})).error(
        422, "invalid_display_name"
    )
    assert message.startswith("display_name:")
    (await api.post("/api/v1/persons", {"display_name": "X", "slug": "no way"})).error(
        422, "invalid_slug"
    )
    (await api.post("/api/v1/persons", {"display_name": "X", "email": "nope"})).error(
        422, "invalid_email"
    )
    (await api.post("/api/v1/persons", {"name": "X"})).error(422, "unknown_field")
    (await api.get("/api/v1/persons/nobody")).error(404, "person_not_found")
    (await api.get("/api/v1/persons/not%20a%20slug")).error(404, "person_not_found")
    (await api.get("/api/v1/persons?limit=0")).error(422, "invalid_parameter")
    (await api.call("PATCH", "/api/v1/persons/ann", json={"active": "no"})).error(
        422, "invalid_active"
    )
    (await api.call("PATCH", "/api/v1/persons/nobody", json={"active": False})).error(
        404, "person_not_found"
    )
    (await api.get("/api/v1/persons", token=None)).error(401, "unauthorized")


async def test_patch_changes_a_person_and_deactivates_them(api: Api) -> None:
    await _create(api, "Ann", slug="ann", email="ann@example.com")
    reply = await api.call(
        "PATCH", "/api/v1/persons/ann", json={"display_name": "Ann L.", "email": None}
    )
    assert reply.status == 200, reply.text
    assert (reply.body["display_name"], reply.body["email"]) == ("Ann L.", None)
    off = await api.call("PATCH", "/api/v1/persons/ann", json={"active": False})
    assert (off.body["active"], off.body["state"]) == (False, "deactivated")
    (await api.post("/api/v1/persons/ann/link-codes")).error(409, "person_deactivated")
    on = await api.call("PATCH", "/api/v1/persons/ann", json={"active": True})
    assert on.body["state"] == "active"


async def test_identities_are_linked_once_and_belong_to_one_person(api: Api) -> None:
    await _create(api, "Ann", slug="ann")
    await _create(api, "Bo", slug="bo")
    added = await api.post("/api/v1/persons/ann/identities", {"identity": "WEB:Example.com:U-1"})
    assert added.status == 201, added.text
    assert [i["identity"] for i in added.body["identities"]] == ["web:example.com:U-1"]
    again = await api.post("/api/v1/persons/ann/identities", {"identity": "web:example.com:U-1"})
    assert again.status == 200, again.text
    taken = await api.post("/api/v1/persons/bo/identities", {"identity": "web:example.com:U-1"})
    assert "person:ann" in taken.error(409, "identity_taken")
    bad = await api.post("/api/v1/persons/bo/identities", {"identity": "web:example.com:has space"})
    assert bad.error(422, "invalid_identity").startswith("identity:")
    (await api.post("/api/v1/persons/bo/identities", {"identity": "fax:x:1"})).error(
        422, "invalid_identity"
    )
    (await api.post("/api/v1/persons/nobody/identities", {"identity": "web:x:1"})).error(
        404, "person_not_found"
    )


async def test_a_link_code_links_an_identity_once(api: Api) -> None:
    await _create(api, "Ann", slug="ann")
    made = await _code(api, "ann")
    assert made["person"] == "ann" and len(made["code"]) == 9 and made["expires_at"].endswith("Z")
    redeemed = await api.post(
        "/api/v1/link-codes/redeem", {"code": made["code"].lower(), "identity": "slack:T1:U1"}
    )
    assert redeemed.status == 200, redeemed.text
    assert redeemed.body["slug"] == "ann"
    assert [i["identity"] for i in redeemed.body["identities"]] == ["slack:t1:U1"]

    used = await api.post(
        "/api/v1/link-codes/redeem", {"code": made["code"], "identity": "web:x:9"}
    )
    assert "already used" in used.error(404, "link_code_used")
    unknown = {"code": "ZZZZ-ZZZZ", "identity": "web:x:9"}
    (await api.post("/api/v1/link-codes/redeem", unknown)).error(404, "link_code_unknown")
    malformed = {"code": "12", "identity": "web:x:9"}
    assert (
        (await api.post("/api/v1/link-codes/redeem", malformed))
        .error(422, "invalid_link_code")
        .startswith("code:")
    )
    (await api.post("/api/v1/persons/ann/link-codes", {"ttl_seconds": 0})).error(422, "invalid_ttl")
    (await api.post("/api/v1/persons/nobody/link-codes")).error(404, "person_not_found")


async def test_an_expired_link_code_is_refused(api: Api) -> None:
    await _create(api, "Ann", slug="ann")
    made = await _code(api, "ann", ttl_seconds=1)
    await asyncio.sleep(1.1)
    expired = await api.post(
        "/api/v1/link-codes/redeem", {"code": made["code"], "identity": "web:x:1"}
    )
    assert "expired" in expired.error(404, "link_code_expired")
    assert (await api.get("/api/v1/persons/ann")).body["identities"] == []


async def test_linking_a_last_identity_merges_and_the_conversation_follows(api: Api) -> None:
    await _create(api, "A", slug="a")
    await _identity(api, "a", "web:example.com:a")
    await _create(api, "B", slug="b")
    await _identity(api, "b", "slack:t1:UB")
    thread = await api.thread("person:a", "role:helpdesk")  # a role no runtime answers here
    said = await api.say(thread["id"], "person:a", "said on the web")

    made = await _code(api, "b")
    body = {"code": made["code"], "identity": "web:example.com:a"}
    redeemed = await api.post("/api/v1/link-codes/redeem", body)
    assert redeemed.status == 200, redeemed.text
    assert sorted(i["identity"] for i in redeemed.body["identities"]) == [
        "slack:t1:UB",
        "web:example.com:a",
    ]
    a = (await api.get("/api/v1/persons/a")).body
    assert (a["state"], a["merged_into"], a["identities"]) == ("merged", "b", [])
    (await api.call("PATCH", "/api/v1/persons/a", json={"active": True})).error(
        409, "person_merged"
    )

    same = await api.thread("role:helpdesk", "person:b")
    assert same["id"] == thread["id"]
    page = await api.timeline(thread["id"], "?as=person:b")
    assert [(e["id"], e["author"], e["text"]) for e in page["events"]] == [
        (said["id"], "person:b", "said on the web")
    ]


async def _conversation(api: Api, person: str) -> tuple[str, str]:
    """A conversation of `person` with echo whose run exists: (thread id, run token)."""
    thread = (await api.thread(person, "role:echo"))["id"]
    await api.say(thread, person, "hello")

    async def runs_of_thread() -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return runs

    runs = await eventually(runs_of_thread, what=f"the run of {person}'s conversation")
    minted = await api.post(f"/api/v1/runs/{runs[0]['id']}/token")
    assert minted.status == 201, minted.text
    return thread, minted.body["token"]


async def test_a_deactivated_persons_run_token_is_refused_at_its_next_call(gateway: Api) -> None:
    await _create(gateway, "Ann", slug="ann")
    _, token = await _conversation(gateway, "person:ann")
    recall = "/api/v1/tools/recall"
    assert (await gateway.post(recall, {}, token=token)).status == 200

    await gateway.call("PATCH", "/api/v1/persons/ann", json={"active": False})
    (await gateway.post(recall, {}, token=token)).error(403, "person_deactivated")
    (await gateway.get("/api/v1/tools", token=token)).error(403, "person_deactivated")

    await gateway.call("PATCH", "/api/v1/persons/ann", json={"active": True})
    assert (await gateway.post(recall, {}, token=token)).status == 200


async def test_a_group_conversation_keeps_its_tools_while_one_person_is_active(
    gateway: Api,
) -> None:
    await _create(gateway, "Ann", slug="ann")
    await _create(gateway, "Bo", slug="bo")
    thread = (await gateway.thread("person:ann", "person:bo", "role:echo"))["id"]
    await gateway.say(thread, "person:ann", "hello")

    async def runs_of_thread() -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = (await gateway.get(f"/api/v1/runs?thread={thread}")).body[
            "runs"
        ]
        return runs

    runs = await eventually(runs_of_thread, what="the run of the group conversation")
    token = (await gateway.post(f"/api/v1/runs/{runs[0]['id']}/token")).body["token"]

    await gateway.call("PATCH", "/api/v1/persons/ann", json={"active": False})
    assert (await gateway.post("/api/v1/tools/recall", {}, token=token)).status == 200
    await gateway.set_state(thread, "person:bo", "removed")
    (await gateway.post("/api/v1/tools/recall", {}, token=token)).error(403, "person_deactivated")
