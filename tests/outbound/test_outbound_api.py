"""The endpoints API over real HTTP: what it refuses and why, what it shows, deletion — and
addresses: loopback, private and link-local ones are refused at registration without
`ROLECALL_ENDPOINTS_ALLOW_PRIVATE`, and again at delivery, whatever was allowed when the endpoint
was registered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.outbound.conftest import (
    Receiver,
    endpoint,
    gateway,
    outbound_settings,
    register,
)
from tests.waiting import eventually

ALICE, BO = "person:alice", "person:bo"


async def test_loopback_private_and_link_local_urls_are_refused_without_the_setting(
    tmp_path: Path,
) -> None:
    async with gateway(outbound_settings(tmp_path, endpoints_allow_private=False)) as api:
        for url, says in [
            ("http://127.0.0.1:9/hook", "127.0.0.1 is a loopback address"),
            ("http://[::1]:9/hook", "::1 is a loopback address"),
            ("http://10.0.0.7/hook", "10.0.0.7 is a private address"),
            ("http://169.254.169.254/latest", "169.254.169.254 is a link-local address"),
            ("http://localhost:9/hook", "localhost resolves to"),
        ]:
            reply = await api.post("/api/v1/endpoints", {"url": url})
            message = reply.error(422, "private_address")
            assert says in message and "ROLECALL_ENDPOINTS_ALLOW_PRIVATE=true" in message
        reply = await api.post("/api/v1/endpoints", {"url": "http://no-such-host.invalid/"})
        assert "does not resolve" in reply.error(422, "unresolvable_host")
        assert (await api.get("/api/v1/endpoints")).body == {"endpoints": []}


async def test_addresses_are_checked_again_at_delivery(tmp_path: Path, receiver: Receiver) -> None:
    allowed = outbound_settings(tmp_path)
    port = receiver.url().split(":")[2].split("/")[0]
    async with gateway(allowed) as api:
        by_ip = await register(api, receiver.url("/ip"))
        by_name = await register(api, f"http://localhost:{port}/name")
        thread = await api.thread(ALICE, BO)
        await api.say(thread["id"], ALICE, "for both")
        await eventually(lambda: _accepted(receiver, 2))

    # a long backoff: what is read below is the first attempt's failure, not a later one's
    refused = outbound_settings(
        tmp_path, endpoints_allow_private=False, endpoints_backoff_base=30, endpoints_backoff_cap=30
    )
    async with gateway(refused) as api:
        thread = await api.thread(ALICE, BO)
        await api.say(thread["id"], ALICE, "not for loopback")

        async def failed(endpoint_id: str) -> dict[str, Any] | None:
            found = await endpoint(api, endpoint_id)
            return found if found["failures"] else None

        ip = await eventually(lambda: failed(by_ip["id"]))
        assert ip["reason"].startswith("attempt 1 failed: refused: 127.0.0.1 is a loopback")
        assert "ROLECALL_ENDPOINTS_ALLOW_PRIVATE=true" in ip["reason"]
        name = await eventually(lambda: failed(by_name["id"]))
        assert "refused: localhost resolves to" in name["reason"]
        assert "loopback address" in name["reason"]
    assert len(receiver.got) == 2  # only what was delivered while it was allowed


async def _accepted(receiver: Receiver, n: int) -> bool:
    return len(receiver.accepted("/ip") + receiver.accepted("/name")) >= n


async def test_bad_registrations_are_refused_naming_the_field(tmp_path: Path) -> None:
    async with gateway(outbound_settings(tmp_path)) as api:
        url = "http://127.0.0.1:9/hook"
        cases: list[tuple[dict[str, object], int, str]] = [
            ({"url": "ftp://example.com/"}, 422, "invalid_url"),
            ({}, 422, "missing_field"),
            ({"url": url, "secret": "mine"}, 422, "unknown_field"),
            ({"url": url, "kinds": ["messages"]}, 422, "invalid_kinds"),
            ({"url": url, "kinds": []}, 422, "invalid_kinds"),
            ({"url": url, "roles": ["ops"]}, 422, "unknown_role"),
            ({"url": url, "roles": ["person:ann"]}, 422, "invalid_roles"),
            ({"url": url, "threads": ["0" * 32]}, 422, "unknown_thread"),
            ({"url": url, "from_position": 99}, 422, "invalid_position"),
            ({"url": url, "from_task_position": -1}, 422, "invalid_position"),
        ]
        for body, status, code in cases:
            reply = await api.post("/api/v1/endpoints", body)
            message = reply.error(status, code)
            if code not in ("missing_field", "unknown_field"):
                field = next(k for k in body if k != "url") if len(body) > 1 else "url"
                assert message.startswith(f"{field}:"), message
        assert (await api.get("/api/v1/endpoints")).body == {"endpoints": []}
        assert (await api.get("/api/v1/endpoints", token=None)).status == 401


async def test_an_endpoint_is_shown_without_its_secret_and_can_be_deleted(
    tmp_path: Path, receiver: Receiver
) -> None:
    async with gateway(outbound_settings(tmp_path)) as api:
        thread = await api.thread(ALICE, BO)
        made = await register(
            api,
            receiver.url(),
            kinds=["message", "task"],
            roles=["role:echo"],
            threads=[thread["id"]],
        )
        secret = made.pop("secret")
        assert len(secret) > 40
        shown = await endpoint(api, made["id"])
        ahead = {"pending": shown.pop("pending"), "last_failure": shown.pop("last_failure")}
        assert shown == made and "secret" not in shown
        assert ahead == {"pending": {"events": 0, "task_events": 0}, "last_failure": None}
        assert set(shown) == {
            "id", "url", "kinds", "roles", "threads", "status", "reason", "failures",
            "position", "task_position", "next_attempt_at", "created_at", "updated_at",
        }  # fmt: skip
        assert (shown["kinds"], shown["roles"], shown["status"]) == (
            ["message", "task"],
            ["echo"],
            "active",
        )
        listed = (await api.get("/api/v1/endpoints")).body["endpoints"]
        assert listed == [{**shown, **ahead}]

        gone = await api.call("DELETE", f"/api/v1/endpoints/{made['id']}")
        assert gone.status == 200 and gone.body["deleted"] is True
        for method, path in [
            ("GET", f"/api/v1/endpoints/{made['id']}"),
            ("POST", f"/api/v1/endpoints/{made['id']}/replay"),
            ("DELETE", f"/api/v1/endpoints/{made['id']}"),
        ]:
            (await api.call(method, path)).error(404, "endpoint_not_found")
        reply = await api.post(f"/api/v1/endpoints/{made['id']}/replay", {"from": 1})
        reply.error(422, "unknown_field")

        everything = await register(api, receiver.url("/all"), kinds=["message"])
        await api.say(thread["id"], ALICE, "after the deletion")
        # the next message reached another endpoint: the deleted one's worker, had it kept
        # one, was woken by the same commit
        await eventually(
            lambda: _accepted_at(receiver, "/all"), what="the other endpoint's delivery"
        )
        assert receiver.at("/hook") == []  # the deleted one got nothing
        assert everything["id"] != made["id"]


async def _accepted_at(receiver: Receiver, path: str) -> bool:
    return bool(receiver.accepted(path))
