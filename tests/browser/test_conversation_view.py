"""What the panel shows of a conversation: "start fresh" and "show earlier", paging back through a
long history, "working…", text that looks like HTML, and errors that keep the typed text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Troubles, Widget, save_screenshot
from tests.waiting import eventually

ANN = "/page?role=echo&user=ann-1&name=Ann+Example"


async def test_start_fresh_hides_what_came_before_behind_show_earlier(
    gateway: Gateway, open_page: OpenPage
) -> None:
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    await widget.send("before the fresh start")
    await expect(widget.texts).to_have_count(2)
    await expect(widget.show_earlier).to_be_hidden()

    await widget.start_fresh.click()
    await page.get_by_role("button", name="Yes, start over").click()  # it asks first
    await expect(widget.texts).to_have_count(0)
    await expect(widget.notices).to_have_text(["Started fresh"])
    await expect(widget.show_earlier).to_be_visible()
    await widget.send("after it")
    await expect(widget.texts.first).to_have_text("after it")
    await expect(widget.texts).to_have_count(2)

    await widget.show_earlier.click()
    await expect(widget.texts).to_have_count(4)
    await expect(widget.texts.first).to_have_text("before the fresh start")
    await expect(widget.texts.nth(2)).to_have_text("after it")
    await expect(widget.show_earlier).to_be_hidden()

    # After a reload the archive is behind "Show earlier" again, fetched from the gateway.
    await page.reload()
    await expect(widget.texts.first).to_have_text("after it")
    await expect(widget.texts).to_have_count(2)
    await widget.show_earlier.click()
    await expect(widget.texts).to_have_count(4)
    await expect(widget.texts.first).to_have_text("before the fresh start")


async def test_scrolling_to_the_top_pages_back_through_a_long_history(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    person = f"person:{session['person']['slug']}"
    for n in range(1, 71):  # 70 messages and their 70 echoes: several pages of history
        await gateway.say(session["conversation"], person, f"note {n}")

    async def all_echoed() -> list[dict[str, Any]] | None:
        messages = await gateway.messages(session["conversation"], person)
        return messages if len(messages) == 140 else None

    # The echoes interleave with the notes as the run catches up: the timeline says in what order.
    timeline = await eventually(all_echoed)
    expected = [message["text"] for message in timeline]

    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    await expect(widget.texts.last).to_have_text(expected[-1])
    await expect(widget.texts).not_to_have_count(len(expected))  # only the newest pages yet
    for _ in range(10):  # scroll to the top until everything is there (each page adds ≤ 30)
        if await widget.texts.count() == len(expected):
            break
        shown = await widget.texts.count()
        await widget.log.evaluate("log => { log.scrollTop = 0; }")
        await expect(widget.texts).not_to_have_count(shown)
    await expect(widget.texts).to_have_text(expected)
    assert await widget.shown_seqs() == [message["seq"] for message in timeline]


async def test_working_shows_while_the_role_answers(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    widget = Widget(await open_page(shop + "/page?role=slow&user=ann-1&name=Ann"), "Slow")
    await widget.send("take your time")
    await expect(widget.working).to_be_visible()
    await expect(widget.working).to_have_text("Slow is working…")
    await expect(widget.status).to_have_text("Slow is working…")
    await expect(widget.texts).to_have_text(["take your time"] * 2)
    await expect(widget.working).to_be_hidden()


async def test_text_that_looks_like_html_is_shown_as_text(
    gateway: Gateway, shop: str, open_page: OpenPage, troubles: Troubles
) -> None:
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    attack = "<img src=x onerror=alert(1)>"
    await widget.send(attack)
    await expect(widget.texts).to_have_text([attack, attack])

    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    person = f"person:{session['person']['slug']}"
    script = "<script>alert(2)</script><b>bold</b>"
    await gateway.say(session["conversation"], person, script)
    await expect(widget.texts).to_have_text([attack, attack, script, script])
    await page.reload()
    await expect(widget.texts).to_have_text([attack, attack, script, script])
    await expect(
        page.locator("rolecall-widget img, rolecall-widget script, rolecall-widget b")
    ).to_have_count(0)
    assert troubles.dialogs == []


async def test_a_narrow_phone_screen_gets_the_whole_width(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    phone: dict[str, Any] = {
        "viewport": {"width": 360, "height": 640},
        "is_mobile": True,
        "has_touch": True,
    }
    page = await open_page(gateway.url + "/", **phone)
    widget = Widget(page, "Concierge")
    widget.panel = page.get_by_role("dialog", name="Chat with Concierge")  # modal on a phone
    await expect(widget.panel).to_be_visible()
    box = await widget.panel.bounding_box()
    assert box is not None
    assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, 360, 640)
    await expect(widget.textbox).to_be_in_viewport()
    await expect(widget.send_button).to_be_in_viewport()
    await expect(widget.launcher).to_be_hidden()  # it would cover the panel; Close chat remains

    await widget.textbox.tap()
    await widget.textbox.fill("hello from a phone")
    await widget.send_button.tap()
    await expect(widget.texts).to_have_count(2)
    await expect(widget.texts.first).to_have_text("hello from a phone")
    save_screenshot(await page.screenshot(), tmp_path, "widget-phone.png")

    await widget.close.tap()
    await expect(widget.panel).to_be_hidden()
    await expect(widget.launcher).to_be_in_viewport()


async def test_a_message_too_long_is_refused_and_stays_in_the_composer(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    widget = Widget(await open_page(shop + ANN), "Echo")
    too_long = "x" * 4001
    await widget.send(too_long)
    await expect(widget.error).to_have_text("That message is too long — 4,000 characters at most.")
    await expect(widget.textbox).to_have_value(too_long)
    await expect(widget.texts).to_have_count(0)

    await widget.send("x" * 4000)  # at the limit: fine, and the error goes away
    await expect(widget.texts).to_have_count(2)
    await expect(widget.error).to_be_hidden()


# One message a minute after the burst of 10, so that the 11th is refused for about a minute.
@pytest.mark.parametrize("gateway_options", [{"widget_post_rate": 1}])
async def test_posting_too_fast_says_when_to_try_again_and_keeps_the_text(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    widget = Widget(await open_page(shop + ANN), "Echo")
    for n in range(10):
        await widget.send(f"message {n}")
        await expect(widget.textbox).to_have_value("")
    await widget.send("one too many")
    await expect(widget.error).to_have_text(re.compile(r"^Slow down — try again in \d+ s\.$"))
    await expect(widget.status).to_have_text(re.compile(r"^Slow down"))
    await expect(widget.textbox).to_have_value("one too many")
    await expect(widget.message("one too many")).to_have_count(0)
