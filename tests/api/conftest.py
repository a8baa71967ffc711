"""The gateway over real HTTP on loopback, on a real SQLite file of its own.

`api` starts the whole application (`build_app`, schema upgrade and all) on 127.0.0.1 on a free
port and talks to it with a real `aiohttp.ClientSession`. Its calls return a `Reply` (status, JSON
body, headers); `Reply.error` checks the one error shape every failure must have.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from multidict import CIMultiDictProxy

from core.model.roles import Role
from gateway.app import build_app
from gateway.settings import Settings
from tests.serving import serve
from tests.settings import make_settings

TOKEN = "test-operator-token-0123456789"

_NO_BODY = object()


@dataclass(frozen=True)
class Reply:
    status: int
    text: str
    headers: CIMultiDictProxy[str]

    @property
    def body(self) -> Any:
        return json.loads(self.text)

    def error(self, status: int, code: str | None = None) -> str:
        """Assert this is the one error shape, with this status (and code); return the message."""
        assert self.status == status, self.text
        assert self.headers["Content-Type"].startswith("application/json"), self.headers
        assert "Traceback" not in self.text
        body = self.body
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"code", "message"}, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
        if code is not None:
            assert body["error"]["code"] == code, body
        message: str = body["error"]["message"]
        return message


class Api:
    token = TOKEN

    def __init__(self, server: TestServer, session: aiohttp.ClientSession) -> None:
        self.server = server
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = _NO_BODY,
        data: Any = None,
        token: str | None = TOKEN,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        sent = dict(headers or {})
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token}")
        extra: dict[str, Any] = {} if json is _NO_BODY else {"json": json}
        url = self.server.make_url(path)
        async with self.session.request(method, url, data=data, headers=sent, **extra) as resp:
            return Reply(resp.status, await resp.text(), resp.headers)

    async def get(self, path: str, **kwargs: Any) -> Reply:
        return await self.call("GET", path, **kwargs)

    async def post(self, path: str, body: Any = _NO_BODY, **kwargs: Any) -> Reply:
        return await self.call("POST", path, json=body, **kwargs)

    # -- the common steps of a scenario, each asserting it worked ----------------------------

    async def thread(self, *participants: str) -> dict[str, Any]:
        reply = await self.post("/api/v1/threads", {"participants": list(participants)})
        assert reply.status in (200, 201), reply.text
        thread: dict[str, Any] = reply.body
        return thread

    async def say(self, thread_id: str, author: str, text: str) -> dict[str, Any]:
        reply = await self.post(
            f"/api/v1/threads/{thread_id}/messages", {"author": author, "text": text}
        )
        assert reply.status == 201, reply.text
        event: dict[str, Any] = reply.body
        return event

    async def set_state(self, thread_id: str, participant: str, state: str) -> dict[str, Any]:
        reply = await self.post(
            f"/api/v1/threads/{thread_id}/participants/{participant}", {"state": state}
        )
        assert reply.status == 200, reply.text
        event: dict[str, Any] = reply.body
        return event

    async def timeline(self, thread_id: str, query: str = "") -> dict[str, Any]:
        reply = await self.get(f"/api/v1/threads/{thread_id}/timeline{query}")
        assert reply.status == 200, reply.text
        page: dict[str, Any] = reply.body
        return page


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/t.db"


@pytest.fixture
def settings(tmp_path: Path, sqlite_url: str) -> Settings:
    return make_settings(tmp_path, database_url=sqlite_url)


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with (
        serve(build_app(settings, api_token=TOKEN)) as server,
        aiohttp.ClientSession() as session,
    ):
        yield Api(server, session)


ECHO = Role.model_validate(
    {"name": "echo", "display_name": "Echo", "runtime": {"kind": "builtin", "agent": "echo"}}
)
SLOW = Role.model_validate(
    {
        "name": "slow",
        "display_name": "Slow",
        "runtime": {"kind": "builtin", "agent": "echo", "delay_ms": 60_000},
        "max_tool_calls_per_turn": 2,
    }
)


@pytest.fixture
async def gateway(settings: Settings) -> AsyncIterator[Api]:
    """The whole application serving two built-in roles: `echo`, which repeats each person
    message at once, and `slow`, which does the same a minute later (a turn to cancel)
    and may make two tool calls a turn."""
    roles = {"echo": ECHO, "slow": SLOW}
    app = build_app(settings, api_token=TOKEN, roles=roles)
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)
