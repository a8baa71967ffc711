"""Named, revocable operator tokens over real HTTP (`gateway.api.tokens`, `gateway.operators`):
made and shown once, listed without the token, revoked and refused from that very request on —
on this replica at once, and on another replica of the same PostgreSQL database as soon as it
hears of it, whatever its cache says. The configured token goes on working as `default`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from core.model.errors import Conflict
from gateway.app import build_app
from gateway.operators import OPERATORS_KEY
from gateway.settings import Settings
from tests.api.conftest import TOKEN, Api, Reply
from tests.conftest import _empty_postgres
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually


@asynccontextmanager
async def gateway(settings: Settings, token: str = TOKEN) -> AsyncIterator[Api]:
    async with (
        serve(build_app(settings, api_token=token)) as server,
        aiohttp.ClientSession() as session,
    ):
        yield Api(server, session)


async def make(api: Api, name: str) -> str:
    reply = await api.post("/api/v1/tokens", {"name": name})
    assert reply.status == 201, reply.text
    token: str = reply.body["token"]
    return token


def refused(reply: Reply, code: str = "unauthorized") -> str:
    message = reply.error(401, code)
    assert reply.headers["WWW-Authenticate"] == 'Bearer realm="rolecall"'
    return message


async def test_a_token_is_made_shown_once_listed_without_it_and_works(api: Api) -> None:
    reply = await api.post("/api/v1/tokens", {"name": "ci"})
    assert reply.status == 201, reply.text
    assert reply.headers["Location"] == "/api/v1/tokens/ci"
    token = reply.body["token"]
    assert token.startswith("rco_")
    assert {k: v for k, v in reply.body.items() if k not in ("token", "created_at")} == {
        "name": "ci",
        "configured": False,
        "last_used_at": None,
        "revoked_at": None,
    }

    listed = await api.get("/api/v1/tokens", token=token)  # the new token works at once
    assert listed.status == 200, listed.text
    assert [(t["name"], t["configured"]) for t in listed.body["tokens"]] == [
        ("default", True),
        ("ci", False),
    ]
    assert token not in listed.text and "token" not in listed.body["tokens"][1]
    shown = (await api.get("/api/v1/tokens/ci")).body
    assert shown["last_used_at"] is not None  # just used
    assert shown["name"] == "ci" and token not in str(shown)
    assert (await api.get("/api/v1/tokens/default")).body["last_used_at"] is not None


async def test_what_cannot_be_made_or_revoked_is_refused_in_one_sentence(api: Api) -> None:
    await make(api, "ci")
    (await api.post("/api/v1/tokens", {"name": "ci"})).error(409, "token_exists")
    (await api.post("/api/v1/tokens", {"name": "default"})).error(409, "token_exists")
    (await api.post("/api/v1/tokens", {"name": "Not Ok"})).error(422, "invalid_token_name")
    (await api.post("/api/v1/tokens", {})).error(422, "missing_field")
    (await api.call("DELETE", "/api/v1/tokens/nobody")).error(404, "token_not_found")
    (await api.call("DELETE", "/api/v1/tokens/NOT%20A%20NAME")).error(404, "token_not_found")
    (await api.get("/api/v1/tokens/nobody")).error(404, "token_not_found")
    assert (await api.call("DELETE", "/api/v1/tokens/ci")).status == 200
    (await api.call("DELETE", "/api/v1/tokens/ci")).error(409, "token_revoked")
    (await api.post("/api/v1/tokens", {"name": "ci"})).error(409, "token_exists")


async def test_a_revoked_token_is_refused_from_the_next_request_on(api: Api) -> None:
    token = await make(api, "ci")
    other = await make(api, "alice")
    assert (await api.get("/api/v1/roles", token=token)).status == 200  # now in the cache

    revoked = await api.call("DELETE", "/api/v1/tokens/ci")
    assert revoked.status == 200, revoked.text
    assert revoked.body["revoked_at"] is not None

    message = refused(await api.get("/api/v1/roles", token=token), "token_revoked")
    assert "'ci' was revoked" in message
    refused(await api.post("/api/v1/threads", {"participants": []}, token=token), "token_revoked")
    assert (await api.get("/api/v1/roles", token=other)).status == 200  # the others still work
    listed = (await api.get("/api/v1/tokens")).body["tokens"]
    assert [t["name"] for t in listed if t["revoked_at"]] == ["ci"]


async def test_a_token_may_revoke_itself_and_is_refused_after(api: Api) -> None:
    token = await make(api, "leaving")
    assert (await api.call("DELETE", "/api/v1/tokens/leaving", token=token)).status == 200
    refused(await api.get("/api/v1/tokens", token=token), "token_revoked")


async def test_unknown_and_missing_tokens_are_refused_as_before(api: Api) -> None:
    refused(await api.get("/api/v1/roles", token=None))
    refused(await api.get("/api/v1/roles", token="rco_" + "x" * 43))
    refused(await api.get("/api/v1/roles", headers={"Authorization": "Basic abc"}, token=None))
    assert (await api.get("/api/v1/roles")).status == 200  # the configured token


async def test_the_configured_token_is_default_revocable_and_renewed_by_the_settings(
    settings: Settings,
) -> None:
    async with gateway(settings) as api:
        named = await make(api, "ci")
        assert (await api.call("DELETE", "/api/v1/tokens/default", token=named)).status == 200
        refused(await api.get("/api/v1/roles"), "token_revoked")
    async with gateway(settings) as api:  # restarted with the same token: still revoked
        refused(await api.get("/api/v1/roles"), "token_revoked")
        assert (await api.get("/api/v1/roles", token=named)).status == 200
    renewed = TOKEN + "-renewed"
    async with gateway(settings, renewed) as api:  # another token configured: default again
        assert (await api.get("/api/v1/roles", token=renewed)).status == 200
        refused(await api.get("/api/v1/roles", token=TOKEN))
        listed = (await api.get("/api/v1/tokens", token=renewed)).body["tokens"]
        assert [(t["name"], t["revoked_at"]) for t in listed] == [("ci", None), ("default", None)]


async def test_a_gateway_will_not_start_with_a_named_token_as_its_own(settings: Settings) -> None:
    async with gateway(settings) as api:
        named = await make(api, "ci")
    with pytest.raises(Conflict) as taken:
        async with gateway(settings, named):
            pass
    assert taken.value.code == "token_taken"
    assert "'ci'" in taken.value.message


# --- replicas -------------------------------------------------------------------------------------

WIDGET_KEY = "tokens-replicas-widget-key-0123456789abcdef"


def _replica(tmp_path: Path, name: str, database_url: str) -> Settings:
    var = tmp_path / name
    var.mkdir()
    return make_settings(
        var, database_url=database_url, replica_id=name, widget_key=WIDGET_KEY, replica_timeout=2
    )


@pytest.mark.postgres
async def test_a_token_revoked_on_one_replica_is_refused_by_another_that_had_it_cached(
    tmp_path: Path, postgres_database: str
) -> None:
    """Replica b keeps what it found for an hour; only the revocation's notification can make
    it refuse the token, and it does, within the time a notification takes."""
    await _empty_postgres(postgres_database)
    async with (
        gateway(_replica(tmp_path, "a", postgres_database)) as a,
        gateway(_replica(tmp_path, "b", postgres_database)) as b,
    ):
        assert b.server.app is not None
        b.server.app[OPERATORS_KEY].cache_for = 3600
        token = await make(a, "ci")
        assert (await b.get("/api/v1/roles", token=token)).status == 200  # made on a: b has it
        assert (await b.get("/api/v1/roles", token=token)).status == 200  # from b's cache

        assert (await a.call("DELETE", "/api/v1/tokens/ci")).status == 200

        async def refused_by_b() -> bool:
            return (await b.get("/api/v1/roles", token=token)).status == 401

        await eventually(refused_by_b, what="replica b refusing the revoked token")
        refused(await b.get("/api/v1/roles", token=token), "token_revoked")
