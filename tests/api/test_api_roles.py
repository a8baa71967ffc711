"""Roles over HTTP: what the gateway loaded from its manifests."""

from __future__ import annotations

from tests.api.conftest import Api


async def test_the_demo_role_is_listed(api: Api) -> None:
    reply = await api.get("/api/v1/roles")

    assert reply.status == 200
    (concierge,) = reply.body["roles"]
    assert concierge["name"] == "concierge"
    assert concierge["address"] == "role:concierge"
    assert concierge["runtime"] == {
        "kind": "builtin",
        "agent": "concierge",
        "delay_ms": 0,
        "stream": False,
    }
    assert concierge["concurrent_threads"] is True


async def test_one_role_and_an_unknown_one(api: Api) -> None:
    assert (await api.get("/api/v1/roles/concierge")).body["display_name"] == "Concierge"
    (await api.get("/api/v1/roles/nobody")).error(404, "role_not_found")


async def test_roles_need_the_operator_token(api: Api) -> None:
    (await api.get("/api/v1/roles", token="wrong-token-wrong-token")).error(401, "unauthorized")
