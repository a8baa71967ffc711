"""`GET /api/v1/threads/{id}/channels`: which Slack DM a conversation is bound to and where each
of its messages stands there — received from the DM, posted (with Slack's ts), failed, deleted
after its retraction — read off what the Slack delivery stored, through real slack-bolt against
the fake Slack; and the rule itself (`core.model.deliveries`) case by case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import expect

from core.model.deliveries import SlackDelivery, SlackFacts, slack_delivery
from tests.api.conftest import TOKEN
from tests.browser.conftest import browser, chromium, open_page, troubles
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import ConsoleClient
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, FakeSlack
from tests.waiting import eventually

__all__ = ["browser", "chromium", "open_page", "troubles"]  # the browser fixtures, shared


async def _thread(gw: SlackGateway) -> str:
    async def found() -> str | None:
        threads = (await gw.api.get("/api/v1/threads?participant=person:alice")).body["threads"]
        return str(threads[0]["id"]) if threads else None

    return await eventually(found, what="alice's conversation")


async def _states(gw: SlackGateway, thread: str) -> dict[int, dict[str, Any]]:
    answer = await gw.api.get(f"/api/v1/threads/{thread}/channels?first=1&last=100")
    assert answer.status == 200, answer.text
    [dm] = answer.body["slack"]
    return {d["seq"]: d for d in dm["deliveries"]}


async def _settled(gw: SlackGateway, thread: str, seq: int, state: str) -> dict[str, Any]:
    async def there() -> dict[str, Any] | None:
        states = await _states(gw, thread)
        return states[seq] if seq in states and states[seq]["state"] == state else None

    return await eventually(there, what=f"message #{seq} {state} in the DM")


async def test_a_dms_messages_are_received_posted_failed_and_deleted(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "hello echo")
        await gw.post_event(said)
        [post] = await fake_slack.wait_for("chat.postMessage")
        thread = await _thread(gw)

        answer = await gw.api.get(f"/api/v1/threads/{thread}/channels?first=1&last=100")
        [dm] = answer.body["slack"]
        assert (dm["role"], dm["channel_id"]) == ("echo", said["event"]["channel"])
        assert dm["cursor"] is not None and dm["since_position"] < dm["cursor"]
        states = await _settled(gw, thread, 2, "posted")
        assert states["ts"] == post.response["ts"]
        assert (await _states(gw, thread))[1]["state"] == "received"

        # A post Slack will never take: the delivery gives up and moves on.
        fake_slack.fail("chat.postMessage", "msg_too_long")
        made = await gw.api.post(
            f"/api/v1/threads/{thread}/messages", {"author": "role:echo", "text": "too long"}
        )
        assert made.status == 201, made.text
        await _settled(gw, thread, made.body["seq"], "failed")

        reply = await gw.api.post(
            f"/api/v1/threads/{thread}/messages/{(await _states(gw, thread))[2]['message_id']}"
            "/retract",
            {"author": "role:echo"},
        )
        assert reply.status == 201, reply.text
        await fake_slack.wait_for("chat.delete")
        await _settled(gw, thread, 2, "deleted")


async def test_the_span_is_bounded_and_an_unknown_thread_is_404(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        thread = (await gw.api.thread("person:bob", "role:echo"))["id"]
        quiet = await gw.api.get(f"/api/v1/threads/{thread}/channels")
        assert quiet.status == 200 and quiet.body == {"slack": [], "widget": []}
        wide = await gw.api.get(f"/api/v1/threads/{thread}/channels?first=1&last=501")
        assert wide.error(422, "invalid_parameter")
        half = await gw.api.get(f"/api/v1/threads/{thread}/channels?first=1")
        assert half.error(422, "missing_parameter")
        missing = await gw.api.get("/api/v1/threads/0123456789abcdef0123456789abcdef/channels")
        assert missing.error(404, "thread_not_found")


async def test_a_widget_identity_of_a_participant_is_listed(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await gw.api.post("/api/v1/persons", {"slug": "ann", "display_name": "Ann"})
        await gw.api.post("/api/v1/persons/ann/identities", {"identity": "web:example.com:42"})
        thread = (await gw.api.thread("person:ann", "role:echo"))["id"]

        answer = await gw.api.get(f"/api/v1/threads/{thread}/channels")

        assert answer.body["widget"] == [{"person": "person:ann", "identity": "web:example.com:42"}]


async def test_the_consoles_conversation_page_says_where_each_message_is_in_slack(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "hello echo")
        await gw.post_event(said)
        thread = await _thread(gw)
        await _settled(gw, thread, 2, "posted")
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            browser = ConsoleClient(gw.server, session)
            await browser.sign_in()

            page = await browser.get(f"/console/conversations/{thread}")

        channel = said["event"]["channel"]
        assert f"Slack DM {channel} of role:echo" in page.plain
        assert f"Slack {channel}: received" in page.plain
        assert f"Slack {channel}: posted" in page.plain


async def test_in_chromium_a_conversation_shows_its_dm_and_each_messages_state(
    tmp_path: Path, fake_slack: FakeSlack, open_page: OpenPage
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await gw.post_event(fake_slack.user_message(ALICE, "where is my parcel?"))
        thread = await _thread(gw)
        await _settled(gw, thread, 2, "posted")
        url = str(gw.server.make_url("")).rstrip("/")
        page = await open_page(url + "/console/login", viewport={"width": 1100, "height": 900})
        await page.get_by_label("Operator token").fill(TOKEN)
        await page.get_by_role("button", name="Sign in").click()
        await page.goto(f"{url}/console/conversations/{thread}")

        delivered = page.get_by_role("list", name="Delivered")
        await expect(delivered.first).to_contain_text("received")
        await expect(delivered.nth(1)).to_contain_text("posted")
        save_screenshot(
            await page.screenshot(full_page=True), tmp_path, "console-conversation-slack.png"
        )


BASE = {"position": 10, "from_slack": False, "since": 5, "cursor": 20}


@pytest.mark.parametrize(
    ("facts", "state"),
    [
        ({"position": 5}, SlackDelivery.BEFORE),
        ({"from_slack": True}, SlackDelivery.RECEIVED),
        ({"received": True}, SlackDelivery.RECEIVED),
        ({"posted_ts": "1.2"}, SlackDelivery.POSTED),
        ({"posted_ts": "1.2", "withdrawn_at": 30}, SlackDelivery.DELETING),
        ({"posted_ts": "1.2", "withdrawn_at": 15}, SlackDelivery.DELETED),
        ({"posted_ts": "1.2", "erased": True}, SlackDelivery.DELETING),
        ({"erased": True}, SlackDelivery.ERASED),
        ({"intent": True}, SlackDelivery.PENDING),
        ({"position": 25}, SlackDelivery.PENDING),
        ({"cursor": None}, SlackDelivery.PENDING),
        ({"withdrawn_at": 15}, SlackDelivery.WITHDRAWN),
        ({"withdrawn_at": 30, "position": 25}, SlackDelivery.WITHDRAWN),
        ({}, SlackDelivery.FAILED),
    ],
)
def test_the_delivery_rule(facts: dict[str, Any], state: SlackDelivery) -> None:
    assert slack_delivery(SlackFacts(**{**BASE, **facts})) is state
