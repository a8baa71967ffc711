"""At least once, with a stable id, across a crash: a real `rolecall serve` is killed with
SIGKILL while the receiver has its request for an event in hand (the gateway never hears the
answer), then started again on the same database. The event is sent again with the same
`webhook-id` and the same body, so a receiver that deduplicates by `webhook-id` takes it once,
and the events after it follow in order."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.serving import serve
from tests.slack.served import Served, served
from tests.waiting import eventually

TOKEN = "outbound-crash-operator-token-0123456789"
ECHO = "name: echo\ndisplay_name: Echo\nruntime: {kind: builtin, agent: echo}\n"


class HoldingReceiver:
    """Records every request; holds the answer to the first one until `release`."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str]] = []  # (webhook-id, body)
        self._release = asyncio.Event()
        self._server: TestServer | None = None
        self._serving = AsyncExitStack()

    async def _handle(self, request: web.Request) -> web.Response:
        self.got.append((request.headers["webhook-id"], await request.text()))
        if len(self.got) == 1:
            await self._release.wait()
        return web.Response(status=204)

    def release(self) -> None:
        self._release.set()

    @property
    def url(self) -> str:
        assert self._server is not None
        return str(self._server.make_url("/hook"))

    async def __aenter__(self) -> HoldingReceiver:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self._server = await self._serving.enter_async_context(serve(app))
        return self

    async def __aexit__(self, *_: object) -> None:
        self.release()
        await self._serving.aclose()


async def _call(http: aiohttp.ClientSession, gateway: Served, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    method = "GET" if body is None else "POST"
    async with http.request(method, gateway.url + path, json=body, headers=headers) as answer:
        assert answer.status < 300, await answer.text()
        return await answer.json()


async def test_a_delivery_cut_off_by_a_kill_is_sent_again_with_the_same_webhook_id(
    tmp_path: Path, database_url: str
) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "echo.yaml").write_text(ECHO)
    settings = {
        "ROLECALL_ROLES_DIR": str(roles),
        "ROLECALL_API_TOKEN": TOKEN,
        "ROLECALL_DATABASE_URL": database_url,
        "ROLECALL_ENDPOINTS_ALLOW_PRIVATE": "true",
        "ROLECALL_ENDPOINTS_BACKOFF_BASE": "0.1",
    }
    var = tmp_path / "var"
    async with HoldingReceiver() as receiver, aiohttp.ClientSession() as http:
        async with served(var, settings, run=0) as gateway:
            await _call(
                http, gateway, "/api/v1/endpoints", {"url": receiver.url, "kinds": ["message"]}
            )
            thread = await _call(
                http, gateway, "/api/v1/threads", {"participants": ["person:ann", "person:bo"]}
            )
            said = [
                await _call(
                    http,
                    gateway,
                    f"/api/v1/threads/{thread['id']}/messages",
                    {"author": "person:ann", "text": f"m{i}"},
                )
                for i in range(3)
            ]

            async def in_hand() -> bool:
                return len(receiver.got) >= 1

            await eventually(in_hand)
            await gateway.kill()  # the receiver has the request; its answer never arrives
        receiver.release()

        async with served(var, settings, run=1):

            async def all_arrived() -> bool:
                return len({webhook_id for webhook_id, _ in receiver.got}) >= len(said)

            await eventually(all_arrived, within=30)

    first, again, *rest = receiver.got
    assert first == again  # the same webhook-id, the same body
    assert first[0] == said[0]["id"]
    assert json.loads(first[1])["data"]["id"] == said[0]["id"]
    assert [webhook_id for webhook_id, _ in rest] == [e["id"] for e in said[1:]]
