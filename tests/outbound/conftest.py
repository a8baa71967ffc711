"""Outbound webhooks over real HTTP on loopback: a receiver that answers as it is told, and the
whole gateway on a SQLite file of its own, startable again on the same file.

`Receiver` is an aiohttp server on 127.0.0.1. Each path answers from its own script — a list
of `(status, headers)` used up one request at a time, then 200 (or whatever `answer_always`
sets) — and records every request it got, with the answer it gave, in arrival order.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.model.roles import Role
from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import TOKEN, Api
from tests.serving import serve
from tests.settings import make_settings

ECHO = Role.model_validate(
    {"name": "echo", "display_name": "Echo", "runtime": {"kind": "builtin", "agent": "echo"}}
)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: str
    status: int
    at: float

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass
class Receiver:
    scripts: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    always: dict[str, int] = field(default_factory=dict)
    got: list[Received] = field(default_factory=list)
    server: TestServer | None = None
    _serving: AsyncExitStack = field(default_factory=AsyncExitStack)

    def url(self, path: str = "/hook") -> str:
        assert self.server is not None
        return str(self.server.make_url(path))

    def script(self, path: str, *answers: tuple[int, dict[str, str]]) -> None:
        self.scripts.setdefault(path, []).extend(answers)

    def answer_always(self, path: str, status: int) -> None:
        self.always[path] = status

    def at(self, path: str = "/hook") -> list[Received]:
        return [r for r in self.got if r.path == path]

    def accepted(self, path: str = "/hook") -> list[Received]:
        return [r for r in self.at(path) if r.ok]

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        script = self.scripts.get(request.path) or []
        status, headers = script.pop(0) if script else (self.always.get(request.path, 200), {})
        self.got.append(
            Received(request.path, dict(request.headers), body, status, time.monotonic())
        )
        return web.Response(status=status, headers=headers, text="")

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self.server = await self._serving.enter_async_context(serve(app))
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._serving.aclose()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as started:
        yield started


def outbound_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "endpoints_allow_private": True,
        "endpoints_backoff_base": 0.05,
        "endpoints_backoff_cap": 0.2,
        "endpoints_park_after": 10,
        "endpoints_timeout": 5.0,
    }
    return make_settings(tmp_path, **(values | overrides))


@asynccontextmanager
async def gateway(settings: Settings) -> AsyncIterator[Api]:
    """The whole application serving the `echo` role, over real HTTP on loopback."""
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO})
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


async def register(api: Api, url: str, **fields: Any) -> dict[str, Any]:
    reply = await api.post("/api/v1/endpoints", {"url": url, **fields})
    assert reply.status == 201, reply.text
    made: dict[str, Any] = reply.body
    return made


async def endpoint(api: Api, endpoint_id: str) -> dict[str, Any]:
    reply = await api.get(f"/api/v1/endpoints/{endpoint_id}")
    assert reply.status == 200, reply.text
    found: dict[str, Any] = reply.body
    return found
