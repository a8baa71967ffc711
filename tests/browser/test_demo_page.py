"""The demo page at `/`: a newcomer talks to the concierge, reloads, and the conversation is there.
Also how the widget is reached from the keyboard and by a screen reader."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot

DESK = "remember that my desk is 4B"
DESK_REPLY = "Hello, I'm Concierge. I'll remember that: my desk is 4B."
RECALL = "what do you remember?"
RECALL_REPLY = "You asked me to remember: my desk is 4B."


async def test_the_demo_page_talks_to_the_concierge_and_a_reload_keeps_the_conversation(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(gateway.url + "/")
    await expect(page.get_by_role("heading", name="Rolecall", exact=True)).to_be_visible()
    await expect(page.get_by_text("docs/widget.md")).to_be_visible()
    widget = Widget(page, "Concierge")
    await expect(widget.panel).to_be_visible()  # open from the start on the demo page
    await expect(widget.panel.get_by_role("heading", name="Concierge")).to_be_visible()

    await widget.send(DESK)
    await expect(widget.texts).to_have_text([DESK, DESK_REPLY])
    await expect(widget.textbox).to_have_value("")
    await expect(widget.message(DESK)).to_have_class("message mine")
    await expect(widget.message(DESK).locator(".author")).to_have_text("You")
    await expect(widget.message(DESK_REPLY).locator(".author")).to_have_text("Concierge")

    await page.reload()  # the visitor token in localStorage brings the same conversation back
    await expect(widget.texts).to_have_text([DESK, DESK_REPLY])
    await widget.send(RECALL)
    await expect(widget.texts).to_have_text([DESK, DESK_REPLY, RECALL, RECALL_REPLY])
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-demo.png")


async def test_another_browser_is_another_visitor(gateway: Gateway, open_page: OpenPage) -> None:
    first = Widget(await open_page(gateway.url + "/"), "Concierge")
    await first.send(DESK)
    await expect(first.texts).to_have_text([DESK, DESK_REPLY])

    second = Widget(await open_page(gateway.url + "/"), "Concierge")  # its own localStorage
    await expect(second.textbox).to_be_visible()
    await second.send(RECALL)
    await expect(second.texts).to_have_text(
        [RECALL, 'Hello, I\'m Concierge. Nothing yet. Tell me "remember …" and I will keep it.']
    )


async def test_the_widget_is_usable_from_the_keyboard_and_by_a_screen_reader(
    gateway: Gateway, open_page: OpenPage
) -> None:
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    await expect(widget.log).to_have_attribute("aria-live", "polite")
    await expect(widget.status).to_have_count(1)
    await expect(widget.launcher).to_have_attribute("aria-expanded", "true")

    # Escape closes the panel and gives focus back to the launcher; Enter opens it again.
    await widget.textbox.focus()
    await page.keyboard.press("Escape")
    await expect(widget.panel).to_be_hidden()
    await expect(widget.launcher).to_be_focused()
    await expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    outline = await widget.launcher.evaluate("button => getComputedStyle(button).outlineStyle")
    assert outline == "solid", "the focused launcher shows no focus ring"
    await page.keyboard.press("Enter")
    await expect(widget.panel).to_be_visible()
    await expect(widget.textbox).to_be_focused()

    # Shift+Enter is a new line, Enter sends.
    await page.keyboard.type("first line")
    await page.keyboard.press("Shift+Enter")
    await page.keyboard.type("second line")
    await expect(widget.textbox).to_have_value("first line\nsecond line")
    await page.keyboard.press("Enter")
    await expect(widget.texts).to_have_count(2)
    await expect(widget.texts.first).to_have_js_property("textContent", "first line\nsecond line")
    await expect(widget.textbox).to_be_focused()

    # Tab from the message box reaches Send, and Send sends.
    await page.keyboard.type("by the button")
    await page.keyboard.press("Tab")
    await expect(widget.send_button).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(widget.texts).to_have_count(4)
    await expect(widget.texts.nth(2)).to_have_text("by the button")
