"""Roles over HTTP: what the gateway loaded from its manifests."""

from __future__ import annotations

from pathlib import Path

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
