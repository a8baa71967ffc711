"""Roles over HTTP: what the gateway loaded from its manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import TOKEN, Api
from tests.serving import serve
from tests.settings import make_settings


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


async def test_a_role_shows_its_secrets_by_setting_name_and_its_retention_as_written(
    tmp_path: Path,
) -> None:
    role = Role.model_validate(
        {
            "name": "keeper",
            "display_name": "Keeper",
            "runtime": {"kind": "builtin", "agent": "echo"},
            "retention": {"messages": "365d", "transcripts": "forever", "memory": "12h"},
            "slack": {"signing_secret": "KEEPER_SIGNING", "bot_token": "KEEPER_BOT"},
        }
    )
    secrets = {"KEEPER_SIGNING": "signing-secret-value", "KEEPER_BOT": "xoxb-bot-token-value"}
    app = build_app(
        make_settings(tmp_path), api_token=TOKEN, roles={"keeper": role}, secrets=secrets
    )
    async with serve(app) as server, aiohttp.ClientSession() as session:
        reply = await Api(server, session).get("/api/v1/roles/keeper")

    assert reply.status == 200
    assert reply.body["slack"]["signing_secret"] == "KEEPER_SIGNING"
    assert reply.body["slack"]["bot_token"] == "KEEPER_BOT"
    assert all(value not in reply.text for value in secrets.values())
    assert reply.body["retention"] == {
        "messages": "365d",
        "memory": "12h",
        "transcripts": "forever",
        "deliveries": None,
    }


async def test_roles_are_paged_by_name_when_a_limit_is_asked(tmp_path: Path) -> None:
    roles = {
        name: Role.model_validate(
            {
                "name": name,
                "display_name": name.title(),
                "runtime": {"kind": "builtin", "agent": "echo"},
            }
        )
        for name in ("cedar", "alder", "birch", "dogwood", "elm")
    }
    app = build_app(make_settings(tmp_path), api_token=TOKEN, roles=roles)
    async with serve(app) as server, aiohttp.ClientSession() as session:
        api = Api(server, session)
        every = (await api.get("/api/v1/roles")).body
        first = (await api.get("/api/v1/roles?limit=2")).body
        second = (await api.get(f"/api/v1/roles?limit=2&after={first['next']}")).body
        last = (await api.get(f"/api/v1/roles?limit=2&after={second['next']}")).body
        exact = (await api.get("/api/v1/roles?limit=2&after=cedar")).body
        beyond = (await api.get("/api/v1/roles?after=zzz")).body
        refused = await api.get("/api/v1/roles?limit=0")

    def names(page: dict[str, Any]) -> list[str]:
        return [r["name"] for r in page["roles"]]

    assert names(every) == ["alder", "birch", "cedar", "dogwood", "elm"] and every["next"] is None
    assert (names(first), first["next"]) == (["alder", "birch"], "birch")
    assert (names(second), second["next"]) == (["cedar", "dogwood"], "dogwood")
    assert (names(last), last["next"]) == (["elm"], None)
    assert (names(exact), exact["next"]) == (["dogwood", "elm"], None)
    assert beyond == {"roles": [], "next": None}
    refused.error(422, "invalid_parameter")
