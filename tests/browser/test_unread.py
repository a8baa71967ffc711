"""While the panel is closed, what others say counts: a badge on the launcher, the number in
front of the page's title, the launcher's accessible name; opening the panel clears all three
and gives the page its own title back."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot

ANN = "/page?role=echo&user=ann-1&name=Ann+Example"


async def test_messages_while_the_panel_is_closed_show_on_the_launcher_and_in_the_title(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    badge = page.locator("rolecall-widget .launcher .badge")
    await widget.send("hello")
    await expect(widget.texts).to_have_text(["hello", "hello"])  # seen: the panel is open
    await expect(badge).to_be_hidden()
    await widget.close.click()
    assert await page.title() == "The shop"

    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    conversation = session["conversation"]
    await gateway.say(conversation, "role:echo", "are you still there?")
    await expect(badge).to_have_text("1")
    await expect(page).to_have_title("(1) The shop")
    await expect(widget.launcher).to_have_accessible_name("Chat with Echo, 1 new message")

    # The person's own message (said elsewhere) does not count; the role's echo of it does.
    await gateway.say(conversation, f"person:{session['person']['slug']}", "from my phone")
    await expect(badge).to_have_text("2")
    await expect(page).to_have_title("(2) The shop")
    await expect(widget.launcher).to_have_accessible_name("Chat with Echo, 2 new messages")
    save_screenshot(await page.screenshot(), tmp_path, "widget-unread.png")

    await widget.launcher.click()
    await expect(widget.panel).to_be_visible()
    await expect(badge).to_be_hidden()
    await expect(page).to_have_title("The shop")
    await expect(widget.launcher).to_have_accessible_name("Chat with Echo")
    await expect(widget.texts.last).to_have_text("from my phone")


async def test_a_title_the_page_sets_meanwhile_is_kept(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    """The page changes its own title while the count shows: the count goes in front of the
    new title, and opening the panel leaves the page's new title."""
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    await expect(widget.textbox).to_be_visible()
    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    await widget.send("first")
    await expect(widget.texts).to_have_count(2)
    await widget.close.click()
    await gateway.say(session["conversation"], "role:echo", "one")
    await expect(page).to_have_title("(1) The shop")
    await page.evaluate("document.title = 'Checkout'")
    await gateway.say(session["conversation"], "role:echo", "two")
    await expect(page).to_have_title("(2) Checkout")
    await widget.launcher.click()
    await expect(page).to_have_title("Checkout")
