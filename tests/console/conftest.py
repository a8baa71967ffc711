"""The operator console over real HTTP, and in the machine's Chromium.

- `console`: the whole gateway (`build_app`, SQLite file of the test's own) on 127.0.0.1 serving
  the roles `echo` and `broken` (whose every attempt fails; one attempt a turn), and accepting
  conversations with roles it does not serve (so a thread can hold a role nobody answers for);
  reached two ways: `console.api` is the operator API with the
  configured token (`tests.api.conftest.Api`), and `console.browser()` is an HTTP client with a
  cookie jar of its own — a browser, as far as the gateway can tell — that signs in, reads pages
  and posts forms (`ConsoleClient`).
- The browser fixtures of tests/browser (`chromium`, `browser`, `troubles`, `open_page`) are
  shared from there: Chromium missing skips, or fails when CI is set.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.engine.runtimes.base import AgentError, Prompt, TurnTools, Update
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.browser.conftest import browser, chromium, open_page, troubles
from tests.serving import free_port, serve
from tests.settings import make_settings

__all__ = [
    "Console",
    "ConsoleClient",
    "browser",
    "chromium",
    "open_page",
    "serve_console",
    "troubles",
]

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass(frozen=True)
class Page:
    status: int
    text: str
    headers: Mapping[str, str]
    cookies: list[str] = field(default_factory=list)
    """The `Set-Cookie` headers, as sent."""

    @property
    def said(self) -> str:
        """The page's text as a person reads it (its HTML escapes undone)."""
        return html.unescape(self.text)

    @property
    def plain(self) -> str:
        """The page's words: tags dropped, spaces collapsed, escapes undone."""
        return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", self.text).split()))

    @property
    def location(self) -> str:
        return self.headers.get("Location", "")

    @property
    def csrf(self) -> str:
        found = _CSRF.search(self.text)
        assert found is not None, "no CSRF token on the page"
        return found.group(1)


class ConsoleClient:
    """One browser's worth of requests: its own cookies, no redirects followed."""

    def __init__(self, server: TestServer, session: aiohttp.ClientSession) -> None:
        self.server = server
        self.session = session
        self.seen: list[Page] = []

    async def call(
        self,
        method: str,
        path: str,
        *,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Page:
        url = self.server.make_url(path)
        async with self.session.request(
            method, url, data=data, headers=headers, allow_redirects=False
        ) as response:
            page = Page(
                response.status,
                await response.text(),
                response.headers,
                response.headers.getall("Set-Cookie", []),
            )
        self.seen.append(page)
        return page

    async def get(self, path: str, **kwargs: Any) -> Page:
        return await self.call("GET", path, **kwargs)

    async def post(self, path: str, data: Mapping[str, str], **kwargs: Any) -> Page:
        return await self.call("POST", path, data=data, **kwargs)

    async def sign_in(self, token: str = TOKEN) -> Page:
        page = await self.post("/console/login", {"token": token})
        assert page.status == 303, page.text
        return page

    def cookie(self) -> str | None:
        """The session cookie's value as this browser keeps it."""
        for cookie in self.session.cookie_jar:
            if cookie.key == "rolecall_console":
                return cookie.value
        return None


@dataclass
class Console:
    server: TestServer
    api: Api
    database_file: Path
    _sessions: list[aiohttp.ClientSession]

    @property
    def url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    def browser(self) -> ConsoleClient:
        # A jar that keeps cookies of an IP address (127.0.0.1), as browsers do.
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        self._sessions.append(session)
        return ConsoleClient(self.server, session)

    async def signed_in(self, token: str = TOKEN) -> ConsoleClient:
        client = self.browser()
        await client.sign_in(token)
        return client


class Broken(BuiltinAgent):
    """An agent whose every attempt fails."""

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        raise AgentError("the model endpoint is down")
        yield  # (an async generator, as agents are)


BROKEN = Role.model_validate(
    {"name": "broken", "display_name": "Broken", "runtime": {"kind": "builtin", "agent": "broken"}}
)


def console_app(tmp_path: Path, port: int) -> web.Application:
    settings = make_settings(
        tmp_path, port=port, public_url=f"http://127.0.0.1:{port}", turn_attempts=1
    )
    runtimes = Runtimes(builtin_agents={**AGENTS, "broken": Broken})
    return build_app(
        settings, api_token=TOKEN, roles={"echo": ECHO, "broken": BROKEN}, runtimes=runtimes
    )


@asynccontextmanager
async def serve_console(app: web.Application, port: int, database: Path) -> AsyncIterator[Console]:
    """`app` served on `port` as a `Console`; its browsers' sessions closed after."""
    sessions: list[aiohttp.ClientSession] = []
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        try:
            yield Console(server, Api(server, http), database, sessions)
        finally:
            for session in sessions:
                await session.close()


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    port = free_port()
    async with serve_console(console_app(tmp_path, port), port, tmp_path / "t.db") as served:
        yield served
