"""The console's roles over real HTTP (`gateway.console.roles`): every role with its runtime,
limits and how its agents fare — healthy, failing while a run of it is failed, unsteady once
that run was retried and answered; a role's page with its runtime, its limits (retention as a
manifest writes it), its secrets by setting name and never by value, its manifest as loaded,
its failed runs and the links to its runs; the list paged by name; an unknown role is a
sentence; and in Chromium, both pages as a person reads them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from core.engine.runtimes.base import AgentError, Prompt, TurnTools, Update
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent
from core.engine.runtimes.builtin.echo import Echo
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from gateway.app import build_app
from gateway.console import roles as console_roles
from tests.api.conftest import ECHO, TOKEN
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console, serve_console
from tests.serving import free_port
from tests.settings import make_settings
from tests.waiting import eventually

SECRETS = {"KEEPER_SIGNING": "signing-secret-value-1", "KEEPER_BOT": "xoxb-keeper-bot-value-1"}


class Flaky(BuiltinAgent):
    """The echo agent, whose every attempt fails while `down` is set."""

    down = True

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        if Flaky.down:
            raise AgentError("the model endpoint is down for now")
        async for update in Echo(self.spec, self.state).turn(prompt, tools):
            yield update


FLAKY = Role.model_validate(
    {"name": "flaky", "display_name": "Flaky", "runtime": {"kind": "builtin", "agent": "flaky"}}
)
KEEPER = Role.model_validate(
    {
        "name": "keeper",
        "display_name": "Keeper",
        "description": "Keeps records for a long time.",
        "runtime": {"kind": "builtin", "agent": "echo", "delay_ms": 5},
        "concurrent_threads": False,
        "max_concurrent_turns": 3,
        "turn_timeout": 45,
        "max_tool_calls_per_turn": 7,
        "retention": {"messages": "365d", "transcripts": "forever"},
        "slack": {"signing_secret": "KEEPER_SIGNING", "bot_token": "KEEPER_BOT"},
    }
)


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    """The gateway serving `echo`, `flaky` (one attempt a turn) and `keeper` (a Slack app whose
    secrets are set, never asked of Slack here)."""
    port = free_port()
    settings = make_settings(
        tmp_path, port=port, public_url=f"http://127.0.0.1:{port}", turn_attempts=1
    )
    Flaky.down = True
    app = build_app(
        settings,
        api_token=TOKEN,
        roles={"echo": ECHO, "flaky": FLAKY, "keeper": KEEPER},
        runtimes=Runtimes(builtin_agents={**AGENTS, "flaky": Flaky}),
        secrets=SECRETS,
    )
    async with serve_console(app, port, tmp_path / "t.db") as served:
        yield served


async def _failed_run(console: Console) -> dict[str, Any]:
    thread = (await console.api.thread("person:ann", "role:flaky"))["id"]
    await console.api.say(thread, "person:ann", "are you there?")

    async def failed() -> dict[str, Any] | None:
        runs = (await console.api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return runs[0] if runs and runs[0]["status"] == "failed" else None

    return await eventually(failed, what="flaky's run failed")


def _row(html: str, name: str) -> str:
    """The table row of role `name` (its text)."""
    start = html.index(f'href="/console/roles/{name}"')
    return html[start : html.index("</tr>", start)]


async def test_the_roles_are_listed_with_runtime_limits_and_health(console: Console) -> None:
    run = await _failed_run(console)
    client = await console.signed_in()

    page = await client.get("/console/roles")

    assert page.status == 200
    echo, flaky, keeper = (_row(page.text, n) for n in ("echo", "flaky", "keeper"))
    assert "<code>builtin</code> echo" in echo and ">healthy<" in echo
    assert ">failing<" in flaky and "1 failed now" in flaky
    assert 'href="/console/runs?role=flaky&amp;status=failed"' in flaky
    assert 'href="/console/runs?role=keeper"' in keeper
    assert "one conversation at a time" in keeper and "45 s" in keeper
    assert 'href="/console/slack?role=keeper"' in keeper

    Flaky.down = False
    retried = await console.api.post(f"/api/v1/runs/{run['id']}/retry", {})
    assert retried.status == 200, retried.text

    async def ready() -> bool:
        return bool((await console.api.get(f"/api/v1/runs/{run['id']}")).body["status"] == "ready")

    await eventually(ready, what="the retried run answered")
    again = _row((await client.get("/console/roles")).text, "flaky")
    assert ">unsteady<" in again and "1 failed turn this hour" in again


async def test_a_role_shows_runtime_limits_secrets_by_name_and_its_manifest(
    console: Console,
) -> None:
    client = await console.signed_in()

    page = await client.get("/console/roles/keeper")

    assert page.status == 200
    said = page.plain
    assert "Keeper role:keeper" in said and "Keeps records for a long time." in said
    assert "Healthy. No run is failed and no turn failed in the last hour." in said
    assert "kind builtin" in said and "agent echo" in said and "delay_ms 5" in said
    assert "stream false" in said
    assert "concurrent_threads no" in said and "max_concurrent_turns 3" in said
    assert "max_tool_calls_per_turn 7" in said and "turn_timeout 45 s" in said
    assert "retention.messages 365d" in said and "retention.transcripts forever" in said
    assert "retention.memory the gateway's default" in said
    assert "slack.signing_secret KEEPER_SIGNING" in said and "slack.bot_token KEEPER_BOT" in said
    assert all(value not in page.text for value in SECRETS.values())
    assert '"max_concurrent_turns": 3' in page.said  # the manifest as loaded
    assert 'href="/console/runs?role=keeper"' in page.text
    assert 'href="/console/slack?role=keeper"' in page.text
    echo = await client.get("/console/roles/echo")
    assert "This role's manifest names no secret." in echo.plain


async def test_a_failing_role_lists_its_failed_runs(console: Console) -> None:
    run = await _failed_run(console)
    client = await console.signed_in()

    page = await client.get("/console/roles/flaky")

    assert "Failing. 1 run is failed now: its last turn failed every attempt." in page.plain
    assert f'href="/console/runs/{run["id"]}"' in page.text
    assert "AgentError: the model endpoint is down for now" in page.plain
    assert 'href="/console/runs?role=flaky&amp;status=failed"' in page.text


async def test_the_roles_are_paged_by_name(
    console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(console_roles, "PAGE", 2)
    client = await console.signed_in()

    first = await client.get("/console/roles")

    assert (
        'href="/console/roles/echo"' in first.text and 'href="/console/roles/flaky"' in first.text
    )
    assert 'href="/console/roles/keeper"' not in first.text and "First page" not in first.text
    assert '<a rel="next" href="/console/roles?after=flaky">Next page</a>' in first.text
    second = await client.get("/console/roles?after=flaky")
    assert 'href="/console/roles/keeper"' in second.text and 'rel="next"' not in second.text
    assert 'href="/console/roles/echo"' not in second.text and "First page" in second.text
    beyond = await client.get("/console/roles?after=zz")
    assert beyond.status == 200 and "No roles come after zz :" in beyond.plain


async def test_an_unknown_role_is_a_sentence(console: Console) -> None:
    client = await console.signed_in()
    page = await client.get("/console/roles/nobody")
    assert page.status == 404 and "No role named 'nobody'." in page.plain


async def test_in_chromium_an_operator_reads_the_roles_and_one_role(
    console: Console, open_page: OpenPage, tmp_path: Path
) -> None:
    await _failed_run(console)
    url = console.url + "/console/login?next=/console/roles"
    page = await open_page(url, viewport={"width": 1100, "height": 800})
    await page.get_by_label("Operator token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()

    await expect(page.get_by_role("heading", name="Roles", exact=True)).to_be_visible()
    await expect(page.get_by_role("row", name="Flaky")).to_contain_text("failing")
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-roles.png")
    await page.get_by_role("link", name="Keeper", exact=True).click()
    await expect(page.get_by_role("heading", name="Limits")).to_be_visible()
    await page.get_by_text("Every field, defaults filled in").click()
    await expect(page.get_by_text('"max_tool_calls_per_turn": 7')).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-role.png")
