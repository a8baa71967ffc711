"""The gateway with its widget channel over real HTTP on loopback, on a real SQLite file.

`web` serves the roles `echo` and `slow` and two sites: `default` (anonymous visitors only) and
`shop`, whose users are signed with `SHOP_SECRET` and whose pages live at `SHOP_ORIGIN`.
`Widget` calls the widget API as a browser would (with an `Origin`), and reads its
Server-Sent Events stream."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest
from aiohttp.test_utils import TestServer
from multidict import CIMultiDictProxy

from gateway.app import build_app
from gateway.settings import Settings, SiteSettings
from tests.api.conftest import ECHO, SLOW, TOKEN, Api
from tests.serving import free_port, serve
from tests.settings import make_settings

SHOP_SECRET = "shop-secret-0123456789-0123456789-abcdef"
OTHER_SECRET = "other-secret-0123456789-0123456789-abcdef"
SHOP_ORIGIN = "http://shop.test:8000"


def user_token(
    sub: str,
    name: str = "Ann",
    *,
    secret: str = SHOP_SECRET,
    expires_in: float = 300,
    **claims: Any,
) -> str:
    payload = {"sub": sub, "name": name, "exp": int(time.time() + expires_in)} | claims
    return jwt.encode(payload, secret, algorithm="HS256")


@dataclass
class Sse:
    """One event of a Server-Sent Events stream."""

    event: str
    data: Any
    id: str | None = None


@dataclass
class Stream:
    response: aiohttp.ClientResponse
    events: list[Sse] = field(default_factory=list)

    async def next(self, wait: float = 10) -> Sse:
        async with asyncio.timeout(wait):
            event, id_ = "message", None
            data: list[str] = []
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    raise EOFError("the stream ended")
                line = raw.decode().rstrip("\r\n")
                if not line:
                    if data:
                        sse = Sse(event, json.loads("\n".join(data)), id_)
                        self.events.append(sse)
                        return sse
                    continue
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)
                elif name == "id":
                    id_ = value

    async def timeline(self, count: int, wait: float = 10) -> list[Sse]:
        """The next `count` timeline events (working signals are skipped)."""
        got: list[Sse] = []
        while len(got) < count:
            sse = await self.next(wait)
            if sse.event == "timeline":
                got.append(sse)
        return got


class Widget:
    def __init__(self, server: TestServer, http: aiohttp.ClientSession, origin: str | None):
        self.server = server
        self.http = http
        self.origin = origin
        self.session: dict[str, Any] = {}

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(extra or {})
        if self.origin is not None:
            headers["Origin"] = self.origin
        if self.session:
            headers["Authorization"] = f"Bearer {self.session['session_token']}"
        return headers

    async def call(
        self, method: str, path: str, body: Any = None, **kw: Any
    ) -> tuple[int, Any, CIMultiDictProxy[str]]:
        url = self.server.make_url("/widget/v1" + path)
        async with self.http.request(
            method, url, json=body, headers=self.headers(kw.pop("headers", None)), **kw
        ) as resp:
            text = await resp.text()
            return resp.status, (json.loads(text) if text else None), resp.headers

    async def start(self, role: str = "echo", **body: Any) -> dict[str, Any]:
        self.session = {}
        status, answer, _ = await self.call("POST", "/sessions", {"role": role, **body})
        assert status == 200, answer
        session: dict[str, Any] = answer
        self.session = session
        return session

    async def say(self, text: str) -> dict[str, Any]:
        status, answer, _ = await self.call("POST", "/messages", {"text": text})
        assert status == 201, answer
        event: dict[str, Any] = answer["event"]
        return event

    async def history(self, query: str = "") -> dict[str, Any]:
        status, answer, _ = await self.call("GET", "/history" + query)
        assert status == 200, answer
        page: dict[str, Any] = answer
        return page

    async def stream(self, *, after: int | None = None, last_event_id: str | None = None) -> Stream:
        query = f"?token={self.session['session_token']}"
        if after is not None:
            query += f"&after={after}"
        headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
        if self.origin is not None:
            headers["Origin"] = self.origin
        response = await self.http.get(
            self.server.make_url("/widget/v1/stream" + query), headers=headers
        )
        assert response.status == 200, await response.text()
        return Stream(response)


@dataclass
class Web:
    server: TestServer
    http: aiohttp.ClientSession
    api: Api

    def widget(self, origin: str | None = None) -> Widget:
        return Widget(self.server, self.http, origin)


def web_settings(tmp_path: Path, port: int, **overrides: Any) -> Settings:
    return make_settings(
        tmp_path,
        port=port,
        sites={
            "shop": SiteSettings.model_validate({"secret": SHOP_SECRET, "origins": [SHOP_ORIGIN]})
        },
        **overrides,
    )


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[Web]:
    port = free_port()
    settings = web_settings(tmp_path, port)
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO, "slow": SLOW})
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        yield Web(server, http, Api(server, http))
