"""The gateway with a Slack app for the role `echo`, over real HTTP on loopback, against the fake
Slack: `SlackGateway.post_event` sends Slack's signed Events API request, `post_interaction` its
signed interactivity request (a click); `api` and `widget` are the operator API and the web
widget of the same gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from opentelemetry.trace import TracerProvider

from core.model.roles import Role
from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import TOKEN, Api
from tests.serving import free_port, serve
from tests.settings import make_settings
from tests.slack.fake_slack import FakeSlack, interactivity_body, signed_request_headers
from tests.web.conftest import Widget

SIGNING = "SLACK_ECHO_SIGNING_SECRET"
BOT = "SLACK_ECHO_BOT_TOKEN"
APP = "SLACK_ECHO_APP_TOKEN"


def echo_role(
    mode: str = "http", *, stream: bool = False, delay_ms: int = 0, agent: str = "echo"
) -> Role:
    """The role `echo` with a Slack app; backed by the built-in `agent` (`echo` by default)."""
    slack: dict[str, Any] = {"mode": mode, "bot_token": BOT}
    slack |= {"signing_secret": SIGNING} if mode == "http" else {"app_token": APP}
    return Role.model_validate(
        {
            "name": "echo",
            "display_name": "Echo",
            "description": "Says back what it is told.",
            "runtime": {"kind": "builtin", "agent": agent, "stream": stream, "delay_ms": delay_ms},
            "slack": slack,
        }
    )


class SlackGateway:
    def __init__(self, server: TestServer, http: aiohttp.ClientSession, fake: FakeSlack):
        self.server = server
        self.http = http
        self.fake = fake
        self.api = Api(server, http)

    def widget(self, origin: str | None = None) -> Widget:
        return Widget(self.server, self.http, origin)

    async def post_event(
        self,
        payload: dict[str, Any],
        *,
        headers: dict[str, str] | None = None,
        secret: str | None = None,
    ) -> tuple[int, str]:
        body = json.dumps(payload).encode()
        signed = signed_request_headers(body, secret or self.fake.app.signing_secret)
        sent = {"Content-Type": "application/json", **signed, **(headers or {})}
        async with self.http.post(
            self.server.make_url("/slack/echo/events"), data=body, headers=sent
        ) as resp:
            return resp.status, await resp.text()

    async def post_interaction(
        self, payload: dict[str, Any], *, secret: str | None = None
    ) -> tuple[int, str]:
        """Slack posts a click (`FakeSlack.click`) to the app's interactivity request URL."""
        body = interactivity_body(payload)
        signed = signed_request_headers(body, secret or self.fake.app.signing_secret)
        sent = {"Content-Type": "application/x-www-form-urlencoded", **signed}
        async with self.http.post(
            self.server.make_url("/slack/echo/interactivity"), data=body, headers=sent
        ) as resp:
            return resp.status, await resp.text()


def slack_settings(
    tmp_path: Path,
    fake: FakeSlack,
    port: int,
    *,
    email_link_teams: Iterable[str] = (),
    pace: float = 0,
    database_url: str | None = None,
    **more: Any,
) -> Settings:
    """`more`: other settings (the widget's `sites`, say)."""
    return make_settings(
        tmp_path,
        **more,
        **({"database_url": database_url} if database_url else {}),
        port=port,
        slack_api_url=fake.api_url,
        slack_pace=pace,
        slack_email_link_teams=frozenset(email_link_teams),
    )


@asynccontextmanager
async def slack_gateway(
    tmp_path: Path,
    fake: FakeSlack,
    *,
    mode: str = "http",
    port: int | None = None,
    stream: bool = False,
    delay_ms: int = 0,
    email_link_teams: Iterable[str] = (),
    pace: float = 0,
    database_url: str | None = None,
    agent: str = "echo",
    tracer_provider: TracerProvider | None = None,
    **more: Any,
) -> AsyncIterator[SlackGateway]:
    """`database_url`: the `database_url` fixture's (SQLite or PostgreSQL); a SQLite file in
    `tmp_path` by default. `agent`: the built-in agent behind the role. `tracer_provider`: the
    gateway makes traces with it (docs/tracing.md). `more`: other settings."""
    port = port or free_port()
    secrets = {SIGNING: fake.app.signing_secret, BOT: fake.bot.token, APP: fake.app.app_token}
    settings = slack_settings(
        tmp_path,
        fake,
        port,
        email_link_teams=email_link_teams,
        pace=pace,
        database_url=database_url,
        **more,
    )
    app = build_app(
        settings,
        api_token=TOKEN,
        roles={"echo": echo_role(mode, stream=stream, delay_ms=delay_ms, agent=agent)},
        secrets=secrets,
        tracer_provider=tracer_provider,
    )
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        yield SlackGateway(server, http, fake)
