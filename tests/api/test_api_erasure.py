"""Erasing a person over real HTTP (docs/privacy.md): nothing goes without `erase=true`, and the
refusal lists what would; a turn running in their conversation is stopped first, so no reply
comes after the erasure, and the run starts fresh; the person is a tombstone their address can
never resolve again; erasing again adds nothing; a merged person is erased through the one they
became; every refusal is the one error shape."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.waiting import eventually

ANN = "person:ann"


async def _run(api: Api, thread_id: str) -> dict[str, Any] | None:
    runs = (await api.get(f"/api/v1/runs?thread={thread_id}")).body["runs"]
    return runs[0] if runs else None


async def test_erasure_asks_first_stops_the_turn_and_leaves_tombstones(gateway: Api) -> None:
    assert (
        await gateway.post("/api/v1/persons", {"display_name": "Ann", "slug": "ann"})
    ).status == 201
    thread = await gateway.thread(ANN, "role:slow")
    said = await gateway.say(thread["id"], ANN, "my card number is 4111")

    async def running() -> dict[str, Any] | None:
        run = await _run(gateway, thread["id"])
        return run if run and run["running"] else None

    run = await eventually(running, what="the slow turn started")

    planned = (await gateway.get("/api/v1/persons/ann/erasure")).body
    assert planned["person"] == ANN and planned["erases"]["threads"] == 1
    refused = await gateway.call("DELETE", "/api/v1/persons/ann")
    message = refused.error(422, "erase_not_confirmed")
    assert message.startswith("erasing person:ann removes 1 thread, 1 message, ")
    assert (await gateway.get("/api/v1/persons/ann")).body["state"] == "active"

    erased = await gateway.call("DELETE", "/api/v1/persons/ann?erase=true")
    assert erased.status == 200, erased.text
    assert (erased.body["state"], erased.body["display_name"]) == ("erased", "(erased)")
    assert erased.body["erased"]["messages"] == 1 and erased.body["erased_at"] is not None

    everything = "?include_archived=true"  # (what came before the fresh session is archived)
    events = (await gateway.timeline(thread["id"], everything))["events"]
    kinds = [e["kind"] for e in events]
    assert kinds[-2:] == ["erased", "system"]  # then the fresh session's note
    [message_event] = [e for e in events if e["kind"] == "message"]  # no reply came: stopped
    assert (message_event["id"], message_event["text"], message_event["erased"]) == (
        said["id"],
        "",
        True,
    )
    after = await _run(gateway, thread["id"])
    assert after is not None and after["id"] == run["id"]
    assert after["running"] is False
    assert after["session"]["number"] == run["session"]["number"] + 1  # started fresh

    gone = await gateway.post("/api/v1/threads", {"participants": [ANN, "role:slow"]})
    assert "erased" in gone.error(410, "person_erased")
    (await gateway.call("PATCH", "/api/v1/persons/ann", json={"active": True})).error(
        410, "person_erased"
    )
    (await gateway.post("/api/v1/persons/ann/link-codes")).error(410, "person_erased")
    posted = {"author": ANN, "text": "still here?"}  # not even an operator writes as her
    (await gateway.post(f"/api/v1/threads/{thread['id']}/messages", posted)).error(
        410, "person_erased"
    )
    (await gateway.post("/api/v1/persons", {"display_name": "Ann", "slug": "ann"})).error(
        409, "person_exists"
    )

    again = await gateway.call("DELETE", "/api/v1/persons/ann?erase=true")
    assert again.status == 200 and again.body["erased"]["messages"] == 0
    now = (await gateway.timeline(thread["id"], everything))["events"]
    assert [e["kind"] for e in now].count("erased") == 1 and now[: len(events)] == events


async def test_refusals_are_clear_and_change_nothing(gateway: Api) -> None:
    (await gateway.call("DELETE", "/api/v1/persons/nobody?erase=true")).error(
        404, "person_not_found"
    )
    (await gateway.get("/api/v1/persons/nobody/erasure")).error(404, "person_not_found")
    (await gateway.call("DELETE", "/api/v1/persons/ann?erase=yes&x=1")).error(
        422, "unknown_parameter"
    )
    assert (
        await gateway.post("/api/v1/persons", {"display_name": "Bo", "slug": "bo"})
    ).status == 201
    (await gateway.call("DELETE", "/api/v1/persons/bo?erase=yes")).error(422, "erase_not_confirmed")
    visitor = "web:default:visitor-1"
    made = await gateway.post("/api/v1/persons", {"display_name": "Visitor", "slug": "v1"})
    assert made.status == 201
    assert (
        await gateway.post("/api/v1/persons/v1/identities", {"identity": visitor})
    ).status == 201
    code = (await gateway.post("/api/v1/persons/bo/link-codes")).body["code"]
    redeemed = await gateway.post("/api/v1/link-codes/redeem", {"code": code, "identity": visitor})
    assert redeemed.status == 200  # v1's last identity moved: v1 is merged into bo
    message = (await gateway.call("DELETE", "/api/v1/persons/v1?erase=true")).error(
        409, "person_merged"
    )
    assert "person:bo" in message
    assert (await gateway.get("/api/v1/persons/v1")).body["state"] == "merged"
    erased = await gateway.call("DELETE", "/api/v1/persons/bo?erase=true")
    assert erased.status == 200 and erased.body["erased"]["identities"] == 1
    assert (await gateway.get("/api/v1/persons/v1")).body["state"] == "erased"
