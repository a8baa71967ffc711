"""An endpoint's delivery log and backlog over real HTTP on loopback: every attempt the worker
recorded, newest first, with what the receiver answered and the standing it left — the failures
that parked it, then the deliveries after its replay — paged, and filtered to the failures; the
endpoint's reads say how many events wait past its cursors and what its last failure was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.outbound.conftest import Receiver, endpoint, gateway, outbound_settings, register
from tests.waiting import eventually

ALICE, BO = "person:alice", "person:bo"


async def _log(api: Any, endpoint_id: str, query: str = "") -> dict[str, Any]:
    reply = await api.get(f"/api/v1/endpoints/{endpoint_id}/deliveries{query}")
    assert reply.status == 200, reply.text
    found: dict[str, Any] = reply.body
    return found


async def test_the_log_shows_what_parked_an_endpoint_and_what_its_replay_delivered(
    tmp_path: Path, receiver: Receiver
) -> None:
    receiver.answer_always("/down", 503)
    async with gateway(outbound_settings(tmp_path, endpoints_park_after=3)) as api:
        made = await register(api, receiver.url("/down"), kinds=["message"])
        thread = await api.thread(ALICE, BO)
        first = await api.say(thread["id"], ALICE, "one")
        second = await api.say(thread["id"], ALICE, "two")

        async def parked() -> dict[str, Any] | None:
            found = await endpoint(api, made["id"])
            return found if found["status"] == "parked" else None

        shown = await eventually(parked, what="the endpoint parked")
        assert shown["pending"] == {"events": 2, "task_events": 0}
        log = await _log(api, made["id"])
        assert [(d["seq"], d["event_id"], d["outcome"], d["status"], d["failures"])
                for d in log["deliveries"]] == [
            (3, first["id"], "HTTP 503", "parked", 3),
            (2, first["id"], "HTTP 503", "active", 2),
            (1, first["id"], "HTTP 503", "active", 1),
        ]  # fmt: skip
        newest = log["deliveries"][0]
        assert newest["type"] == "timeline.message" and newest["stream"] == "timeline"
        assert newest["position"] == first["position"] and newest["http_status"] == 503
        assert newest["delivered"] is False and log["next"] is None
        assert shown["last_failure"] == newest
        listed = (await api.get("/api/v1/endpoints")).body["endpoints"]
        assert listed[0]["pending"] == shown["pending"] and listed[0]["last_failure"] == newest

        receiver.answer_always("/down", 204)
        await api.post(f"/api/v1/endpoints/{made['id']}/replay")

        async def caught_up() -> dict[str, Any] | None:
            found = await endpoint(api, made["id"])
            return found if found["position"] == second["position"] else None

        done = await eventually(caught_up, what="both messages delivered")
        assert done["pending"] == {"events": 0, "task_events": 0}
        assert done["last_failure"] == newest  # the log keeps what parked it
        page = await _log(api, made["id"], "?limit=2")
        assert [(d["seq"], d["event_id"], d["delivered"], d["outcome"], d["status"])
                for d in page["deliveries"]] == [
            (5, second["id"], True, "HTTP 204", "active"),
            (4, first["id"], True, "HTTP 204", "active"),
        ]  # fmt: skip
        assert page["next"] == 4
        older = await _log(api, made["id"], "?before=4&limit=2")
        assert [d["seq"] for d in older["deliveries"]] == [3, 2] and older["next"] == 2
        failed = await _log(api, made["id"], "?failed=true")
        assert [d["seq"] for d in failed["deliveries"]] == [3, 2, 1]

        (await api.get(f"/api/v1/endpoints/{made['id']}/deliveries?before=0")).error(
            422, "invalid_parameter"
        )
        gone = "0" * 31 + "1"
        (await api.get(f"/api/v1/endpoints/{gone}/deliveries")).error(404, "endpoint_not_found")
        assert (await api.call("DELETE", f"/api/v1/endpoints/{made['id']}")).status == 200
        (await api.get(f"/api/v1/endpoints/{made['id']}/deliveries")).error(
            404, "endpoint_not_found"
        )
