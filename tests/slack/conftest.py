"""Fixtures for the Slack channel's tests: a fake Slack on loopback and a real SDK client of it.

`fake_slack` is a started `FakeSlack` with one app, its bot in one workspace and two people
(`ALICE`, `BOB`); `slack_client` is the real `AsyncWebClient` with the bot's token, pointed at it.
The proxy variables are cleared: slack_sdk would otherwise send loopback calls through a proxy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from tests.slack.fake_slack import ALICE, BOB, FakeSlack

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


@pytest.fixture
async def fake_slack(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeSlack]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with FakeSlack(users=(ALICE, BOB)) as fake:
        yield fake


@pytest.fixture
def slack_client(fake_slack: FakeSlack) -> AsyncWebClient:
    """The bot's Web API client (no retry handlers beyond the SDK's default ones)."""
    return AsyncWebClient(token=fake_slack.bot.token, base_url=fake_slack.api_url)
