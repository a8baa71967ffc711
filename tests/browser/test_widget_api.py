"""The host page drives the widget with `window.Rolecall` (docs/widget.md, "The page's API"):
`open()` and `close()`, `on("message", fn)` called with each new message the visitor sees
(author, text, at, …), and `identify(token)` turning an anonymous visitor into the host site's
signed-in user — refused tokens rejected, the panel saying why."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot
from tests.browser.host_page import user_token
from tests.browser.test_widget_theme import Page, embedding


@pytest.fixture
async def themed(gateway: Gateway, shop_port: int) -> AsyncIterator[Page]:
    """The host page of `test_widget_theme`, on the shop's origin."""
    async with embedding(gateway, shop_port) as url:
        yield url


LISTEN = (
    "window.seen = []; window.addEventListener('rolecall:ready', () => "
    "Rolecall.on('message', (m) => window.seen.push(m)));"
)


async def test_open_close_and_on_message_from_the_host_pages_script(
    gateway: Gateway, themed: Page, open_page: OpenPage, tmp_path: Path
) -> None:
    """Rolecall.open() shows the panel, close() hides it; the listener hears the visitor's
    message and the role's answer, not the history loaded again after a reload."""
    page = await open_page(themed(role="echo", script=LISTEN))
    widget = Widget(page, "Echo")
    await expect(widget.launcher).to_be_visible()
    await page.evaluate("Rolecall.open()")
    await expect(widget.panel).to_be_visible()
    await widget.send("hello api")
    await expect(widget.texts).to_have_text(["hello api", "hello api"])
    seen: list[dict[str, Any]] = await page.evaluate("window.seen")
    assert [(m["mine"], m["text"], m["role"]) for m in seen] == [
        (True, "hello api", "echo"),
        (False, "hello api", "echo"),
    ]
    assert seen[1]["author"] == "role:echo" and seen[1]["author_name"] == "Echo"
    assert all(m["at"] and m["id"] for m in seen)
    await page.evaluate("Rolecall.close()")
    await expect(widget.panel).to_be_hidden()

    await page.reload()
    await page.evaluate("Rolecall.open()")
    await expect(widget.texts).to_have_count(2)
    assert await page.evaluate("window.seen") == []
    save_screenshot(await page.screenshot(), tmp_path, "widget-api.png")


async def test_identify_makes_the_visitor_the_signed_in_user_and_rejects_a_refused_token(
    gateway: Gateway, themed: Page, open_page: OpenPage
) -> None:
    """An anonymous visitor talks, then the page calls identify(ann's token): what is said next
    is in Ann's conversation (her visitor's earlier message kept there, linked); a token signed
    with another secret rejects with invalid_user_token and the panel says so."""
    page = await open_page(themed(role="echo", open="true"))
    widget = Widget(page, "Echo")
    await widget.send("as a visitor")
    await expect(widget.texts).to_have_count(2)

    token = user_token("ann", "Ann Example")
    await page.evaluate("(token) => Rolecall.identify(token)", token)
    await widget.send("as Ann")
    await expect(widget.message("as Ann")).to_have_count(2)
    session = await gateway.widget_session("echo", "ann", "Ann Example")
    person = f"person:{session['person']['slug']}"

    # The widget showed the answer to "as Ann": both are committed.
    texts = [m["text"] for m in await gateway.messages(session["conversation"], person)]
    assert texts.count("as Ann") == 2 and "as a visitor" in texts, texts

    bad = user_token("ann", "Ann", secret="not-the-shop-secret-0123456789-0123456789")
    code = await page.evaluate(
        "(token) => Rolecall.identify(token).then(() => 'taken', (error) => error.code)", bad
    )
    assert code == "invalid_user_token"
    await expect(widget.error).to_contain_text("user token")
