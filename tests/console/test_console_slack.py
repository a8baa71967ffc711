"""The console's Slack page over real HTTP (`gateway.console.slack`), against the fake Slack Web
API: a role's app with its settings by name (never a value) and its workspace, OK once a person
wrote and the reply was posted, then failing with `token_revoked` (the method and when) while
Slack refuses the role's posts; a role without an app is the API's sentence; a gateway with no
Slack app says so; and in Chromium, the page a person reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from channels.slack import delivery
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console, serve_console
from tests.serving import free_port
from tests.slack.conftest import PROXY_VARIABLES
from tests.slack.dm_gateway import APP, BOT, SIGNING, SlackGateway, echo_role, slack_settings
from tests.slack.fake_slack import ALICE, TEAM_ID, FakeSlack
from tests.waiting import eventually


@dataclass
class Served:
    console: Console
    slack: SlackGateway
    fake: FakeSlack


@pytest.fixture
async def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Served]:
    """The gateway serving `echo` with a Slack app (one workspace, the fake's) and `plain`
    without one, signed requests from Slack and console browsers both."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(delivery, "RETRY_PAUSE", 0.05)
    async with FakeSlack(users=(ALICE,)) as fake:
        port = free_port()
        settings = slack_settings(tmp_path, fake, port, public_url=f"http://127.0.0.1:{port}")
        secrets = {SIGNING: fake.app.signing_secret, BOT: fake.bot.token, APP: fake.app.app_token}
        plain = ECHO.model_copy(update={"name": "plain", "display_name": "Plain"})
        roles = {"echo": echo_role(), "plain": plain}
        app = build_app(settings, api_token=TOKEN, roles=roles, secrets=secrets)
        async with serve_console(app, port, tmp_path / "t.db") as console:
            yield Served(console, SlackGateway(console.server, console.api.session, fake), fake)


async def _workspace(served: Served, **wanted: Any) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        reply = await served.console.api.get("/api/v1/slack/echo/workspaces")
        shown = reply.body["workspaces"]
        ok = shown and all(shown[0].get(k) == v for k, v in wanted.items())
        return shown[0] if ok else None

    return await eventually(found, what=f"the workspace with {wanted}")


async def _ok(served: Served) -> dict[str, Any]:
    """Alice wrote, and the reply was recorded as posted."""
    await served.slack.post_event(served.fake.user_message(ALICE, "hello"))
    await served.fake.wait_for("chat.postMessage", ok=True)

    async def posted() -> dict[str, Any] | None:
        reply = await served.console.api.get("/api/v1/slack/echo/workspaces")
        shown = reply.body["workspaces"]
        return shown[0] if shown and shown[0]["last_post_at"] else None

    return await eventually(posted, what="the reply recorded")


async def test_the_app_and_its_workspace_are_shown_ok_then_failing_on_token_revoked(
    served: Served,
) -> None:
    client = await served.console.signed_in()
    before = await client.get("/console/slack")
    assert before.status == 200
    assert "No workspace of this app is known yet: nobody has written to its bot." in before.plain

    await _ok(served)
    page = await client.get("/console/slack?role=echo")

    said = page.plain
    assert TEAM_ID in said and "OK" in said and "by its bot token" in said
    assert "slack.signing_secret" in said and SIGNING in said and BOT in said
    assert "in one workspace, with a bot token" in said
    for secret in (served.fake.app.signing_secret, served.fake.bot.token):
        assert secret not in page.text
    assert '<option value="echo" selected>' in page.text

    served.fake.fail("chat.postMessage", "token_revoked", times=None)
    await served.slack.post_event(served.fake.user_message(ALICE, "are you there?"))
    failing = await _workspace(served, health="failing")
    page = await client.get("/console/slack?role=echo")

    assert 'class="health-failing"' in page.text
    assert "Failing" in page.plain
    assert "token_revoked to chat.postMessage" in page.plain
    assert failing["error"]["at"][:10] in page.plain  # when, as a person reads it


async def test_a_role_without_an_app_or_unknown_is_a_sentence(served: Served) -> None:
    client = await served.console.signed_in()

    plain = await client.get("/console/slack?role=plain")
    nobody = await client.get("/console/slack?role=nobody")

    assert plain.status == 404 and "Role 'plain' has no Slack app." in plain.plain
    assert nobody.status == 404 and "No role named 'nobody'." in nobody.plain


async def test_without_any_slack_app_the_page_says_so(console: Console) -> None:
    client = await console.signed_in()
    page = await client.get("/console/slack")
    assert page.status == 200
    assert "No role served here has a Slack app" in page.plain


async def test_the_page_needs_a_session(served: Served) -> None:
    page = await served.console.browser().get("/console/slack")
    assert page.status == 303 and page.location.startswith("/console/login")


async def test_in_chromium_an_operator_reads_a_workspaces_health(
    served: Served, open_page: OpenPage, tmp_path: Path
) -> None:
    await _ok(served)
    served.fake.fail("chat.postMessage", "token_revoked", times=None)
    await served.slack.post_event(served.fake.user_message(ALICE, "are you there?"))
    await _workspace(served, health="failing")
    url = served.console.url
    page = await open_page(
        url + "/console/login?next=/console/slack", viewport={"width": 1100, "height": 800}
    )
    await page.get_by_label("Operator token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()

    await expect(page.get_by_role("heading", name="Slack", exact=True)).to_be_visible()
    table = page.get_by_role("table", name="Workspaces")
    await expect(table.get_by_role("row", name=TEAM_ID)).to_contain_text("token_revoked")
    await expect(table.get_by_role("row", name=TEAM_ID)).to_contain_text("Failing")
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-slack.png")
