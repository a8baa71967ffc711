"""The console's runs over real HTTP (`gateway.console.runs`): a role's runs listed; a run's page
with its state and its transcript turn by turn (what it was told, a tool call with its arguments
and result, the reply, an attempt's error); and its controls, each through the operator API as
the signed-in operator — cancel a running turn, start fresh after a confirmation, retry a failed
run, mint a run token shown once — each refused without the session's CSRF token.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from core.engine.runtimes.base import AgentError, Prompt, Reply, ToolCall, TurnTools, Update
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent
from core.engine.runtimes.builtin.echo import Echo
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console, serve_console
from tests.serving import free_port
from tests.settings import make_settings
from tests.waiting import eventually


class Noter(BuiltinAgent):
    """Stores each person message with the gateway's `store` tool, notes the call in its
    transcript, then answers that it did."""

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        for event in prompt.news:
            if event.kind == "message" and str(event.author).startswith("person:"):
                payload = {"note": event.text}
                stored = await tools.call("store", {"payload": payload})
                yield ToolCall("store", {"payload": payload}, result=stored)
                yield Reply(f"noted: {event.text} ({'shared' if stored['shared'] else 'here'})")


class Waiter(BuiltinAgent):
    """Answers "done" once `go` is set; until then its turn runs (a turn to cancel)."""

    go = asyncio.Event()

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        await Waiter.go.wait()
        yield Reply("done")


class Flaky(BuiltinAgent):
    """The echo agent, whose every attempt fails while `down` is set (a run to retry)."""

    down = True

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        if Flaky.down:
            raise AgentError("the model endpoint is down for now")
        async for update in Echo(self.spec, self.state).turn(prompt, tools):
            yield update


HERE = {"noter": Noter, "waiter": Waiter, "flaky": Flaky}


def _role(name: str) -> Role:
    return Role.model_validate(
        {"name": name, "display_name": name.title(), "runtime": {"kind": "builtin", "agent": name}}
    )


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    """The whole gateway serving `echo` and this file's agents (one attempt a turn)."""
    port = free_port()
    settings = make_settings(
        tmp_path, port=port, public_url=f"http://127.0.0.1:{port}", turn_attempts=1
    )
    runtimes = Runtimes(builtin_agents={**AGENTS, **HERE})
    roles = {"echo": ECHO, **{name: _role(name) for name in HERE}}
    Waiter.go = asyncio.Event()
    Flaky.down = True
    app = build_app(settings, api_token=TOKEN, roles=roles, runtimes=runtimes)
    async with serve_console(app, port, tmp_path / "t.db") as served:
        yield served


async def _run(console: Console, thread: str, **wanted: Any) -> dict[str, Any]:
    """The thread's one run, once it has every field of `wanted`."""

    async def found() -> dict[str, Any] | None:
        runs = (await console.api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        ok = runs and all(runs[0].get(k) == v for k, v in wanted.items())
        return runs[0] if ok else None

    return await eventually(found, what=f"the run of {thread} with {wanted}")


async def _said_by(console: Console, thread: str, role: str) -> list[str]:
    page = await console.api.timeline(thread, "?limit=100")
    return [e["text"] for e in page["events"] if e.get("author") == role]


async def test_a_roles_runs_are_listed_with_their_state_and_links(console: Console) -> None:
    threads = []
    for name in ("ann", "bob"):
        thread = (await console.api.thread(f"person:{name}", "role:echo"))["id"]
        await console.api.say(thread, f"person:{name}", "hi")
        threads.append(thread)
    runs = [await _run(console, t, turns=1, running=False) for t in threads]
    client = await console.signed_in()

    page = await client.get("/console/runs?role=echo")

    assert page.status == 200
    for run, thread in zip(runs, threads, strict=True):
        assert f'href="/console/runs/{run["id"]}"' in page.text
        assert f'href="/console/conversations/{thread}"' in page.text
    assert '<option value="echo" selected>' in page.text
    later = await client.get(f"/console/runs?role=echo&after={runs[0]['id']}")
    assert runs[0]["id"] not in later.text and runs[1]["id"] in later.text
    empty = await client.get("/console/runs?role=noter")
    assert "This role has no runs." in empty.plain
    first = await client.get("/console/runs")  # the first role served
    assert first.status == 200 and "Runs of role:" in first.plain


async def test_a_runs_transcript_shows_the_prompt_the_tool_call_and_the_reply(
    console: Console,
) -> None:
    thread = (await console.api.thread("person:ann", "role:noter"))["id"]
    await console.api.say(thread, "person:ann", "my desk is 4B")
    run = await _run(console, thread, turns=1, running=False)
    client = await console.signed_in()

    page = await client.get(f"/console/runs/{run['id']}")

    assert page.status == 200
    said = page.plain
    assert "Turn 1: message → replied" in said
    assert "What it was told: 1 new event, 1 waiting for an answer" in said
    assert "person:ann : my desk is 4B" in said
    assert "Tool call store" in said
    assert '"note": "my desk is 4B"' in page.said  # the arguments
    assert '"shared": false' in page.said  # the result
    assert "Reply noted: my desk is 4B (here)" in said
    assert "Status ready" in said and f"Cursor seq {run['cursor']}" in said


async def test_the_transcript_is_paged_newest_turns_first(console: Console) -> None:
    thread = (await console.api.thread("person:ann", "role:echo"))["id"]
    for n in range(12):
        await console.api.say(thread, "person:ann", f"message {n}")
        await _run(console, thread, turns=n + 1, running=False)
    run = await _run(console, thread)
    client = await console.signed_in()

    newest = await client.get(f"/console/runs/{run['id']}")
    headings = [int(n) for n in _turn_numbers(newest.text)]
    assert headings == list(range(12, 2, -1))
    assert f'href="/console/runs/{run["id"]}?after=0"' in newest.text
    older = await client.get(f"/console/runs/{run['id']}?after=0")
    assert _turn_numbers(older.text) == [str(n) for n in range(10, 0, -1)]
    assert "Newer turns" in older.text


def _turn_numbers(html: str) -> list[str]:
    return re.findall(r'id="turn-(\d+)"', html)


async def test_cancel_stops_the_running_turn_and_says_so(console: Console) -> None:
    thread = (await console.api.thread("person:ann", "role:waiter"))["id"]
    await console.api.say(thread, "person:ann", "take your time")
    run = await _run(console, thread, running=True)
    client = await console.signed_in()
    csrf = (await client.get(f"/console/runs/{run['id']}")).csrf

    refused = await client.post(f"/console/runs/{run['id']}/cancel", {})
    assert refused.status == 403
    assert (await console.api.get(f"/api/v1/runs/{run['id']}")).body["running"] is True

    done = await client.post(f"/console/runs/{run['id']}/cancel", {"csrf": csrf})

    assert done.status == 303 and done.location == f"/console/runs/{run['id']}?done=cancelled"
    shown = await client.get(done.location)
    assert "The running turn was stopped; it ended as cancelled." in shown.plain
    assert "Turn 1: message → cancelled" in shown.plain
    again = await client.post(f"/console/runs/{run['id']}/cancel", {"csrf": csrf})
    assert again.status == 409 and "This run has no turn running." in again.plain
    trail = (await console.api.get("/api/v1/audit?action=run.cancel")).body["records"]
    assert [(r["actor"], r["detail"]["run_id"]) for r in trail] == [("default", run["id"])]
    Waiter.go.set()


async def test_start_fresh_is_confirmed_first_then_opens_the_next_session(
    console: Console,
) -> None:
    thread = (await console.api.thread("person:ann", "role:echo"))["id"]
    await console.api.say(thread, "person:ann", "hello")
    run = await _run(console, thread, turns=1, running=False)
    client = await console.signed_in()

    asked = await client.get(f"/console/runs/{run['id']}/fresh")

    assert asked.status == 200 and "Start fresh?" in asked.plain
    assert "opens session 2" in asked.plain and "archives everything said before it" in asked.plain
    assert (await console.api.get(f"/api/v1/runs/{run['id']}")).body["session"]["number"] == 1
    assert (await client.post(f"/console/runs/{run['id']}/fresh", {})).status == 403
    done = await client.post(f"/console/runs/{run['id']}/fresh", {"csrf": asked.csrf})
    assert done.status == 303 and done.location.endswith("?done=fresh")
    assert (await console.api.get(f"/api/v1/runs/{run['id']}")).body["session"]["number"] == 2
    assert "The run started fresh" in (await client.get(done.location)).plain


async def test_a_failed_run_is_retried_and_answers_the_message_it_failed_on(
    console: Console,
) -> None:
    thread = (await console.api.thread("person:ann", "role:flaky"))["id"]
    await console.api.say(thread, "person:ann", "are you there?")
    run = await _run(console, thread, status="failed", running=False)
    client = await console.signed_in()
    page = await client.get(f"/console/runs/{run['id']}")
    assert "Retry the failed turn" in page.plain
    assert "AgentError: the model endpoint is down for now" in page.plain
    Flaky.down = False

    done = await client.post(f"/console/runs/{run['id']}/retry", {"csrf": page.csrf})

    assert done.status == 303 and done.location.endswith("?done=retried")
    await _run(console, thread, status="ready", turns=2, running=False)
    assert await _said_by(console, thread, "role:flaky") == ["are you there?"]
    shown = await client.get(f"/console/runs/{run['id']}")
    assert "Retry the failed turn" not in shown.plain
    again = await client.post(f"/console/runs/{run['id']}/retry", {"csrf": page.csrf})
    assert again.status == 409 and "only a run whose last turn failed" in again.plain


async def test_a_run_token_is_shown_once_and_works_for_the_agent_tools(console: Console) -> None:
    thread = (await console.api.thread("person:ann", "role:echo"))["id"]
    await console.api.say(thread, "person:ann", "hello")
    run = await _run(console, thread, turns=1, running=False)
    client = await console.signed_in()
    csrf = (await client.get(f"/console/runs/{run['id']}")).csrf

    minted = await client.post(f"/console/runs/{run['id']}/token", {"csrf": csrf})

    assert minted.status == 200
    assert minted.headers["Cache-Control"] == "no-store"
    [token] = re.findall(r'value="(rct_[^"]+)"', minted.text)
    tools = await console.api.get("/api/v1/tools", token=token)
    assert tools.status == 200, tools.text
    assert token not in (await client.get(f"/console/runs/{run['id']}")).text
    assert all(token not in page.location for page in client.seen)
    [record] = (await console.api.get("/api/v1/audit?action=run.token_minted")).body["records"]
    assert record["actor"] == "default" and token not in str(record)
    assert (await client.post(f"/console/runs/{run['id']}/token", {})).status == 403


async def test_an_unknown_run_is_a_sentence(console: Console) -> None:
    client = await console.signed_in()
    page = await client.get("/console/runs/nope")
    assert page.status == 404 and "No run with id 'nope'" in page.plain


async def test_a_roles_runs_are_filtered_by_status(console: Console) -> None:
    failing = (await console.api.thread("person:ann", "role:flaky"))["id"]
    await console.api.say(failing, "person:ann", "are you there?")
    run = await _run(console, failing, status="failed", running=False)
    client = await console.signed_in()

    failed = await client.get("/console/runs?role=flaky&status=failed")
    ready = await client.get("/console/runs?role=flaky&status=ready")

    assert run["id"] in failed.text and "the model endpoint is down for now" in failed.plain
    assert run["id"] not in ready.text and "This role has no ready runs." in ready.plain
    assert '<option value="failed" selected>' in failed.text


async def test_in_chromium_an_operator_reads_a_transcript_and_cancels_a_running_turn(
    console: Console, open_page: OpenPage, tmp_path: Path
) -> None:
    noted = (await console.api.thread("person:ann", "role:noter"))["id"]
    await console.api.say(noted, "person:ann", "my desk is 4B")
    run = await _run(console, noted, turns=1, running=False)
    waiting = (await console.api.thread("person:bob", "role:waiter"))["id"]
    await console.api.say(waiting, "person:bob", "take your time")
    slow = await _run(console, waiting, running=True)
    page = await open_page(console.url + "/console/login", viewport={"width": 1100, "height": 800})
    await page.get_by_label("Operator token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()

    # The runs of a role, then one run and its transcript with a tool call.
    nav = page.get_by_role("navigation", name="Console pages")
    await nav.get_by_role("link", name="Runs").click()
    await page.get_by_label("Role").select_option("noter")
    await page.get_by_role("button", name="Show its runs").click()
    await expect(page.get_by_role("heading", name="Runs of role:noter")).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-runs.png")
    await page.get_by_role("link", name=f"run {run['id']}").click()
    await expect(page.get_by_role("heading", name="Turn 1: message → replied")).to_be_visible()
    await page.get_by_text("Arguments").click()
    await expect(page.get_by_text('"note": "my desk is 4B"')).to_be_visible()
    await page.get_by_text("Result").click()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-run.png")

    # A running turn, cancelled.
    await page.goto(f"{console.url}/console/runs/{slow['id']}")
    await expect(page.get_by_text("A turn is running now.")).to_be_visible()
    await page.get_by_role("button", name="Cancel the running turn").click()
    await expect(page.get_by_role("status")).to_have_text(
        "The running turn was stopped; it ended as cancelled."
    )
    await expect(page.get_by_role("heading", name="Turn 1: message → cancelled")).to_be_visible()
    Waiter.go.set()
