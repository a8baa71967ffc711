"""The widget when its person is erased (channels/web/static/widget.js, docs/widget.md), in real
Chromium against the real gateway: whether the stream brings the `erased` event or — the stream
cut meanwhile — the next call answers 401 `session_expired` saying so, the panel clears the
messages it showed, says "This conversation was erased." and starts over: the same browser is
someone new, whose new conversation is empty and goes on as any other."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Locator, Page, expect

from tests.browser.harness import Gateway, OpenPage, Relay, Widget, save_screenshot

ERASED = "This conversation was erased."
ANN = "/page?role=echo&user=ann-1&name=Ann+Example"


@pytest.fixture
async def relay(gateway: Gateway) -> AsyncIterator[Relay]:
    """The network between the browser and the gateway, to be cut."""
    relay = Relay(gateway.settings.port)
    await relay.start()
    yield relay
    await relay.close()


async def _person_of_the_only_conversation(gateway: Gateway, role: str) -> str:
    status, found = await gateway.call("GET", f"/api/v1/threads?participant={role}")
    assert status == 200, found
    [thread] = found["threads"]
    [person] = [p["address"] for p in thread["participants"] if p["address"] != role]
    return str(person).removeprefix("person:")


async def _erase(gateway: Gateway, slug: str) -> dict[str, Any]:
    status, erased = await gateway.call("DELETE", f"/api/v1/persons/{slug}?erase=true")
    assert status == 200, erased
    return dict(erased)


def _notice(page: Page) -> Locator:
    return page.locator("rolecall-widget .erased-notice")


async def _new_person_talks(gateway: Gateway, widget: Widget, role: str, erased: str) -> None:
    """After the erasure the widget is someone new: what they say starts a new conversation."""
    await widget.send("hello again")
    await expect(widget.texts.first).to_have_text("hello again")
    await expect(_notice(widget.page)).to_be_hidden()
    status, found = await gateway.call("GET", f"/api/v1/threads?participant={role}")
    assert status == 200, found
    people = {p["address"] for thread in found["threads"] for p in thread["participants"]} - {role}
    assert len(people) == 2 and f"person:{erased}" in people


async def _visitor_token(page: Page) -> str | None:
    value = await page.evaluate(
        "() => Object.keys(localStorage).filter((k) => k.endsWith(':visitor'))"
        ".map((k) => localStorage.getItem(k))[0] || null"
    )
    return str(value) if value is not None else None


async def test_the_erased_event_clears_the_panel_and_the_visitor_starts_anew(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    await widget.send("my locker is 42")
    await expect(widget.texts).to_have_count(2)
    visitor = await _visitor_token(page)
    assert visitor is not None
    slug = await _person_of_the_only_conversation(gateway, "role:concierge")

    await _erase(gateway, slug)

    await expect(_notice(page)).to_have_text(ERASED)
    await expect(widget.messages).to_have_count(0)
    await expect(widget.status).to_have_text(ERASED)
    await expect(widget.error).to_be_hidden()
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-erased.png")
    assert await _visitor_token(page) == visitor  # the same browser: the gateway forgot it

    await _new_person_talks(gateway, widget, "role:concierge", slug)


async def test_a_call_refused_as_erased_clears_the_panel_too(
    gateway: Gateway, shop: str, relay: Relay, open_page: OpenPage
) -> None:
    page = await open_page(f"{shop}{ANN}&gateway={relay.url}")
    widget = Widget(page, "Echo")
    await widget.send("my locker is 42")
    await expect(widget.texts).to_have_text(["my locker is 42"] * 2)
    slug = await _person_of_the_only_conversation(gateway, "role:echo")

    # The stream is cut before the erasure: the widget learns of it from a 401.
    relay.down = True
    relay.cut()
    await expect(widget.error).to_have_text("Connection lost — reconnecting…")
    await _erase(gateway, slug)
    relay.down = False

    await expect(_notice(page)).to_have_text(ERASED)
    await expect(widget.messages).to_have_count(0)
    await expect(widget.error).to_be_hidden()
    await _new_person_talks(gateway, widget, "role:echo", slug)
