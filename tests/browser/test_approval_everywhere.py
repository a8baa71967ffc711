"""One approval, every channel: an ACP agent (the test agent on the `agent-client-protocol`
package) asks permission for an `execute` call under `permissions: {execute: ask}`. The request
appears in the person's Slack DM (the real slack-bolt against the fake Slack Web API) and in the
widget (real Chromium); a click in Slack resolves it; the widget's card shows the outcome without
a reload; the Slack message shows it too; the agent receives "allow" and the turn finishes with
its reply, in both channels."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from channels.slack.approvals import action_id
from core.model.roles import Role
from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot
from tests.browser.host_page import SITE
from tests.runtimes.test_acp_runtime import FAKE
from tests.slack.block_preview import preview_page
from tests.slack.conftest import PROXY_VARIABLES
from tests.slack.fake_slack import ALICE, FakeSlack, interactivity_body, signed_request_headers
from tests.waiting import eventually

SIGNING, BOT = "SLACK_CODER_SIGNING_SECRET", "SLACK_CODER_BOT_TOKEN"
PAGE = "/page?role=coder&user=alice-web&name=Alice+Example"


@pytest.fixture
async def fake_slack(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeSlack]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with FakeSlack(users=(ALICE,)) as fake:
        yield fake


@pytest.fixture
def gateway_options(fake_slack: FakeSlack) -> dict[str, Any]:
    return {"slack_api_url": fake_slack.api_url, "slack_pace": 0}


@pytest.fixture
def gateway_roles(tmp_path: Path) -> Mapping[str, Role]:
    coder = Role.model_validate(
        {
            "name": "coder",
            "display_name": "Coder",
            "runtime": {
                "kind": "acp",
                "command": sys.executable,
                "args": [str(FAKE)],
                "env": {"FAKE_ACP_JOURNAL": str(tmp_path / "journal.jsonl")},
                "permissions": {"execute": "ask", "*": "deny"},
            },
            "slack": {"mode": "http", "signing_secret": SIGNING, "bot_token": BOT},
        }
    )
    return {"coder": coder}


@pytest.fixture
def gateway_secrets(fake_slack: FakeSlack) -> Mapping[str, str]:
    return {SIGNING: fake_slack.app.signing_secret, BOT: fake_slack.bot.token}


async def _from_slack(gateway: Gateway, fake: FakeSlack, path: str, body: bytes) -> None:
    """Slack's signed request to the role's app, as Slack sends it."""
    kind = "application/json" if path == "events" else "application/x-www-form-urlencoded"
    headers = {"Content-Type": kind, **signed_request_headers(body, fake.app.signing_secret)}
    async with gateway.http.post(
        f"{gateway.url}/slack/coder/{path}", data=body, headers=headers
    ) as answer:
        assert answer.status == 200, await answer.text()


async def _draw(open_page: OpenPage, message: dict[str, Any], tmp_path: Path, name: str) -> None:
    """A screenshot of the blocks Slack was sent, as a Slack client draws such a message."""
    page = await open_page("about:blank", viewport={"width": 600, "height": 300})
    await page.set_content(preview_page(message["blocks"], bot="Coder", time="10:32 AM"))
    shot = await page.locator(".message").screenshot()
    save_screenshot(shot, tmp_path, name)


async def test_an_acp_agents_question_is_answered_in_slack_and_seen_in_the_widget(
    gateway: Gateway, fake_slack: FakeSlack, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    # Alice asks in her Slack DM; the agent wants to run `rm` and the role's policy asks her.
    said = fake_slack.user_message(ALICE, "ask rm execute")
    await _from_slack(gateway, fake_slack, "events", json.dumps(said).encode())
    dm = said["event"]["channel"]

    def question_posted() -> dict[str, Any] | None:
        for message in fake_slack.messages(dm):
            if any(b.get("type") == "actions" for b in message.get("blocks") or []):
                return message
        return None

    posted = await eventually(question_posted, what="the question in Alice's Slack DM")
    assert "Run rm" in posted["text"]
    await _draw(open_page, posted, tmp_path, "slack-approval-asked.png")
    status, threads = await gateway.call("GET", "/api/v1/threads?participant=role:coder")
    assert status == 200, threads
    [thread] = threads["threads"]
    [alice] = [p["address"] for p in thread["participants"] if p["address"] != "role:coder"]
    status, pending = await gateway.call("GET", f"/api/v1/threads/{thread['id']}/approvals")
    assert status == 200, pending
    [approval] = pending["approvals"]
    assert [o["label"] for o in approval["options"]] == ["Allow", "Always", "Reject"]

    # The same Alice on the shop's site: her widget shows the same question, live.
    status, linked = await gateway.call(
        "POST",
        f"/api/v1/persons/{alice.removeprefix('person:')}/identities",
        {"identity": f"web:{SITE}:alice-web"},
    )
    assert status in (200, 201), linked
    page = await open_page(shop + PAGE, viewport={"width": 1000, "height": 900})
    widget = Widget(page, "Coder")
    card = page.get_by_role("group", name="Approval request from Coder: Run rm")
    await expect(card).to_be_visible()
    await expect(card.get_by_role("button")).to_have_text(["Allow", "Always", "Reject"])
    await expect(widget.working).to_be_visible()  # the turn runs on, paused on the question
    await expect(widget.working).to_have_text("Coder is waiting for an answer…")
    save_screenshot(await widget.panel.screenshot(), tmp_path, "approval-everywhere-asked.png")

    # She clicks "Allow" in Slack.
    clicked = fake_slack.click(ALICE, dm, posted["ts"], action_id(approval["id"], "yes"))
    await _from_slack(gateway, fake_slack, "interactivity", interactivity_body(clicked))

    outcome = card.locator(".approval-outcome")
    await expect(outcome).to_contain_text("Allow")  # no reload: over the widget's stream
    await expect(card.get_by_role("button")).to_have_count(0)
    await expect(widget.message("rm: yes")).to_be_visible()  # the agent was allowed, and said so
    await expect(widget.working).to_be_hidden()  # its turn is over
    save_screenshot(await widget.panel.screenshot(), tmp_path, "approval-everywhere-answered.png")

    def updated() -> dict[str, Any] | None:
        message = fake_slack.message(dm, posted["ts"])
        blocks = message.get("blocks") if message else None
        done = blocks and not any(b.get("type") == "actions" for b in blocks)
        return message if done else None

    shown = await eventually(updated, what="the Slack question updated to its outcome")
    assert "Allow" in json.dumps(shown["blocks"]) and "Slack" in json.dumps(shown["blocks"])
    await _draw(open_page, shown, tmp_path, "slack-approval-answered.png")
    await eventually(
        lambda: any(m.get("text") == "rm: yes" for m in fake_slack.messages(dm)),
        what="the agent's reply in the Slack DM",
    )
    status, resolved = await gateway.call("GET", f"/api/v1/approvals/{approval['id']}")
    assert status == 200, resolved
    assert resolved["resolution"]["by"] == alice
    assert "Answered *Allow* by alice (Slack)" in json.dumps(shown["blocks"])
    assert resolved["resolution"]["channel"] == "slack"
    journal = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert [e["chosen"] for e in journal if e["event"] == "permission"] == ["yes"]
    status, timeline = await gateway.call("GET", f"/api/v1/threads/{thread['id']}/timeline")
    kinds = [e["kind"] for e in timeline["events"]]
    assert kinds.count("approval_requested") == 1 and kinds.count("approval_resolved") == 1
