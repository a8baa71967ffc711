"""On a phone-sized screen the open panel covers the page, so it is a modal dialog: it says so
(role dialog, aria-modal), takes focus when it opens, keeps Tab and Shift+Tab inside, and Escape
closes it with focus back on the launcher. Beside a page (a wide screen) it is a region. Messages
of different days are headed by a separator: "Today", "Yesterday" or the local date."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot

PHONE: dict[str, Any] = {"viewport": {"width": 360, "height": 640}, "is_mobile": True}
DAY_MICROS = 86_400 * 1_000_000


async def test_on_a_phone_the_panel_is_a_modal_dialog_that_keeps_focus_inside(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    """Tab from the last control goes to the first and Shift+Tab back; no Tab reaches the page
    behind; Escape closes and focus is on the launcher again; opening it again focuses its
    message box."""
    page = await open_page(gateway.url + "/", **PHONE)
    dialog = page.get_by_role("dialog", name="Chat with Concierge")
    await expect(dialog).to_be_visible()
    await expect(dialog).to_have_attribute("aria-modal", "true")
    widget = Widget(page, "Concierge")
    await expect(widget.textbox).to_be_focused()

    inside = "() => document.activeElement && document.activeElement.localName"
    for _ in range(12):
        await page.keyboard.press("Tab")
        assert await page.evaluate(inside) == "rolecall-widget"
    await widget.textbox.focus()
    await page.keyboard.press("Tab")  # Send, the last control
    await expect(widget.send_button).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Link another channel")).to_be_focused()
    await page.keyboard.press("Shift+Tab")
    await expect(widget.send_button).to_be_focused()
    save_screenshot(await page.screenshot(), tmp_path, "widget-phone-dialog.png")

    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    await expect(widget.launcher).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(dialog).to_be_visible()
    await expect(widget.textbox).to_be_focused()


async def test_beside_the_page_the_panel_is_a_region_in_the_launchers_corner(
    gateway: Gateway, open_page: OpenPage
) -> None:
    """A wide screen: no dialog, nothing modal; the open panel sits in the launcher's corner,
    over it (the launcher out of the Tab order), and the launcher is back once it closes."""
    page = await open_page(gateway.url + "/", viewport={"width": 1280, "height": 800})
    widget = Widget(page, "Concierge")
    await expect(widget.panel).to_be_visible()
    await expect(widget.panel).not_to_have_attribute("aria-modal", "true")
    await expect(page.get_by_role("dialog")).to_have_count(0)
    covered = await widget.launcher.evaluate(
        """button => {
          const box = button.getBoundingClientRect();
          const root = button.getRootNode();
          const top = root.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
          return Boolean(top && top.closest(".panel")) && button.tabIndex === -1;
        }"""
    )
    assert covered, "the launcher shows beside the open panel, or Tab reaches it"
    box = await widget.panel.bounding_box()
    assert box is not None
    assert box["x"] + box["width"] == 1280 - 20 and box["y"] + box["height"] == 800 - 20, box
    await widget.close.click()
    await expect(widget.launcher).to_be_visible()
    await expect(widget.launcher).to_be_focused()


async def test_messages_of_different_days_are_headed_by_today_yesterday_or_the_date(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    """Three messages of the role, the first moved ten days back and the second one day back in
    storage: the log shows the date, "Yesterday", "Today", each right before its day's first
    message; a new message today adds no separator."""
    session = await gateway.widget_session("echo", "dee", "Dee")
    thread = session["conversation"]
    old = await gateway.say(thread, "role:echo", "ten days ago")
    yesterday = await gateway.say(thread, "role:echo", "yesterday")
    await gateway.say(thread, "role:echo", "today")
    database = sqlite3.connect(gateway.settings.database_url.split("///", 1)[1])
    with database:
        for event, days in ((old, 10), (yesterday, 1)):
            database.execute(
                "UPDATE events SET at = at - ? WHERE id = ?", (days * DAY_MICROS, event["id"])
            )
    database.close()

    page = await open_page(f"{shop}/page?role=echo&user=dee&name=Dee")
    widget = Widget(page, "Echo")
    await expect(widget.messages.filter(has_text="ten days ago")).to_have_count(1)
    separators = page.locator("rolecall-widget li.day")
    await expect(separators).to_have_count(3)
    labels = await separators.all_inner_texts()
    assert labels[1:] == ["Yesterday", "Today"], labels
    assert labels[0] not in ("Today", "Yesterday") and any(c.isdigit() for c in labels[0])
    order = await page.locator("rolecall-widget ol.messages > li").evaluate_all(
        "items => items.map(i => i.classList.contains('day') ? 'day' : i.dataset.seq)"
    )
    assert order[0] == "day" and order[2] == "day", order
    await widget.send("one more")
    await expect(widget.message("one more")).to_have_count(2)
    await expect(separators).to_have_count(3)
    save_screenshot(await page.screenshot(), tmp_path, "widget-days.png")
