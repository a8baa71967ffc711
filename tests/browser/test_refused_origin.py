"""The widget on a page its site does not allow: the visitor reads, plainly, that the chat is
not available there; the browser's console tells the operator what to change
(ROLECALL_SITES); the gateway logs the refused origin once, however often the page asks."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import ConsoleMessage, expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot
from tests.browser.host_page import page_app
from tests.serving import serve

NOT_HERE = "This chat is not available on this site."
FOR_THE_OPERATOR = (
    "rolecall widget: this site is not allowed to use this chat (operator: add it to "
    "ROLECALL_SITES)"
)


@pytest.fixture
async def elsewhere(gateway: Gateway) -> AsyncIterator[str]:
    """The shop's page, copied to an origin no site allows (another port)."""
    async with serve(page_app(gateway.url)) as server:
        yield str(server.make_url("")).rstrip("/")


async def test_a_page_of_an_origin_not_allowed_is_told_why(
    gateway: Gateway,
    elsewhere: str,
    open_page: OpenPage,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    """The preflight passes, the session is refused with a reason the widget can read: the
    visitor gets a plain sentence, the console the operator's instruction (once); a reload adds
    no second warning to the gateway's log."""
    caplog.set_level(logging.WARNING, logger="rolecall.web")
    page = await open_page("about:blank")
    console: list[ConsoleMessage] = []
    page.on("console", lambda message: console.append(message))
    await page.goto(elsewhere + "/page?role=echo")
    widget = Widget(page, "echo")
    await expect(widget.error).to_have_text(NOT_HERE)
    await expect(widget.status).to_have_text(NOT_HERE)
    errors = [message.text for message in console if message.type == "error"]
    told = [text for text in errors if text.startswith(FOR_THE_OPERATOR)]
    assert len(told) == 1, errors
    assert elsewhere in told[0] and "'shop'" in told[0]  # the gateway's own words follow
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-refused-origin.png")

    await page.reload()
    await expect(widget.error).to_have_text(NOT_HERE)
    refused = [
        record.getMessage()
        for record in caplog.records
        if record.name == "rolecall.web" and record.levelno == logging.WARNING
    ]
    assert len(refused) == 1, refused
    assert elsewhere in refused[0] and "ROLECALL_SITES" in refused[0]
