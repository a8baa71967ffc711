"""Two of the person's actions that must not lose anything: "Start fresh" asks first (and
Escape or Cancel leave everything as it was), and a message that fails on its way — the chat
cannot be reached — stays in the list marked "Not sent" with Retry, which sends it once the
chat is back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Relay, Widget, save_screenshot

ANN = "/page?role=echo&user=ann-1&name=Ann+Example"
NOT_SENT = "Your message was not sent. Retry it when the chat is back."


@pytest.fixture
async def relay(gateway: Gateway) -> AsyncIterator[Relay]:
    """The network between the browser and the gateway, to be cut."""
    relay = Relay(gateway.settings.port)
    await relay.start()
    yield relay
    await relay.close()


async def test_start_fresh_asks_first_and_cancel_or_escape_keep_the_conversation(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    question = widget.panel.get_by_role("group", name="Start a fresh conversation?")
    yes = question.get_by_role("button", name="Yes, start over")
    await widget.send("keep this")
    await expect(widget.texts).to_have_count(2)

    await widget.start_fresh.click()
    await expect(question).to_be_visible()
    await expect(widget.start_fresh).to_have_attribute("aria-expanded", "true")
    await expect(yes).to_be_focused()
    await expect(question).to_contain_text("Show earlier")
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-start-fresh.png")
    await question.get_by_role("button", name="Cancel").click()
    await expect(question).to_be_hidden()
    await expect(widget.start_fresh).to_be_focused()
    await expect(widget.texts).to_have_count(2)

    await widget.start_fresh.click()
    await page.keyboard.press("Escape")  # closes the question, not the panel
    await expect(question).to_be_hidden()
    await expect(widget.panel).to_be_visible()
    await expect(widget.texts).to_have_count(2)

    await widget.start_fresh.click()
    await yes.click()
    await expect(widget.texts).to_have_count(0)
    await expect(widget.notices).to_have_text(["Started fresh"])
    await expect(widget.textbox).to_be_focused()


async def test_a_message_that_fails_on_its_way_is_marked_and_retry_sends_it_once(
    gateway: Gateway, shop: str, relay: Relay, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(f"{shop}{ANN}&gateway={relay.url}")
    widget = Widget(page, "Echo")
    await widget.send("one")
    await expect(widget.texts).to_have_text(["one", "one"])

    relay.down = True
    relay.cut()
    await widget.send("while the network is down")
    unsent = widget.log.locator("li.unsent")
    await expect(unsent).to_have_count(1)
    await expect(unsent.locator(".text")).to_have_text("while the network is down")
    await expect(unsent).to_contain_text("Not sent.")
    await expect(widget.error).to_have_text(NOT_SENT)
    await expect(widget.textbox).to_have_value("")  # the message waits in the list instead
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-not-sent.png")

    relay.down = False
    await unsent.get_by_role("button", name="Retry").click()
    await expect(unsent).to_have_count(0)
    await expect(widget.texts).to_have_text(["one", "one"] + ["while the network is down"] * 2)
    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    person = f"person:{session['person']['slug']}"
    said = [m["text"] for m in await gateway.messages(session["conversation"], person)]
    assert said.count("while the network is down") == 2  # once, and its echo


async def test_a_message_the_gateway_refuses_stays_in_the_composer_not_in_the_list(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    """A refusal is not a failure on the way: retrying the same text would not help."""
    widget = Widget(await open_page(shop + ANN), "Echo")
    await widget.send("x" * 4001)
    await expect(widget.error).to_have_text("That message is too long — 4,000 characters at most.")
    await expect(widget.textbox).to_have_value("x" * 4001)
    await expect(widget.log.locator("li.unsent")).to_have_count(0)
