"""The widget's look from its script tag's `data-` attributes (docs/widget.md, "Attributes"):
an accent colour (with a text colour that reads on it), the corner, the launcher's text, and the
colour scheme (`light`, `dark`, or `auto`: the visitor's system setting). The open panel takes
the launcher's corner and the launcher hides under it.

The host page here is the shop's origin (allowed for the site `shop`), embedding the widget with
whatever attributes the test gives (`themed_page`).
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from urllib.parse import urlencode

import pytest
from aiohttp import web
from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot
from tests.browser.host_page import SITE
from tests.serving import serve

Page = Callable[..., str]
"""`themed(**attributes)`: the URL of a page embedding the widget with these data- attributes
(`launcher_text="Hi"` is `data-launcher-text="Hi"`)."""


def page_app(gateway_url: str) -> web.Application:
    """`GET /embed?<name>=<value>…`: the widget with `data-<name>="<value>"` for each, and
    `?script=…` a script the page runs after it (the host page's own code)."""

    async def embed(request: web.Request) -> web.Response:
        attributes = {"src": f"{gateway_url}/widget.js", "data-site": SITE}
        script = ""
        for name, value in request.query.items():
            if name == "script":
                script = value
            else:
                attributes[f"data-{name}"] = value
        tag = " ".join(f'{name}="{html.escape(value)}"' for name, value in attributes.items())
        body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Host</title></head>
<body><h1>Host</h1><a href="#top">A link of the page</a>
<script>{script}</script>
<script {tag} async></script>
</body></html>"""
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/embed", embed)
    return app


@contextlib.asynccontextmanager
async def embedding(gateway: Gateway, shop_port: int) -> AsyncIterator[Page]:
    """The host page served on the shop's origin while in the block; yields `themed`."""
    async with serve(page_app(gateway.url), port=shop_port):

        def url(**attributes: str) -> str:
            query = urlencode({name.replace("_", "-"): value for name, value in attributes.items()})
            return f"{gateway.shop_origin}/embed?{query}"

        yield url


@pytest.fixture
async def themed(gateway: Gateway, shop_port: int) -> AsyncIterator[Page]:
    async with embedding(gateway, shop_port) as url:
        yield url


async def test_accent_corner_launcher_text_and_dark_scheme_come_from_the_script_tag(
    gateway: Gateway, themed: Page, open_page: OpenPage, tmp_path: Path
) -> None:
    """data-accent paints the launcher, the header and Send; data-position=left puts launcher and
    panel on the left; data-launcher-text is the launcher's text and name; data-theme=dark darkens
    the panel on a light system. Open, the panel sits in the launcher's corner, over it."""
    page = await open_page(
        themed(
            role="echo", accent="#0b7a53", position="left", launcher_text="Questions?", theme="dark"
        ),
        viewport={"width": 1200, "height": 800},
        color_scheme="light",
    )
    launcher = page.get_by_role("button", name="Questions?")
    await expect(launcher).to_be_visible()
    await expect(launcher).to_have_css("background-color", "rgb(11, 122, 83)")
    await expect(launcher).to_have_css("color", "rgb(255, 255, 255)")
    box = await launcher.bounding_box()
    assert box is not None and box["x"] == 20, box

    await launcher.click()
    widget = Widget(page, "Echo")
    await expect(widget.panel).to_be_visible()
    covered = await launcher.evaluate(
        """button => {
          const box = button.getBoundingClientRect();
          const root = button.getRootNode();
          const top = root.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
          return Boolean(top && top.closest(".panel")) && button.tabIndex === -1;
        }"""
    )
    assert covered, "the launcher shows beside the open panel, or Tab reaches it"
    await expect(widget.panel).to_have_css("background-color", "rgb(28, 29, 34)")
    await expect(widget.send_button).to_have_css("background-color", "rgb(11, 122, 83)")
    await expect(page.locator("rolecall-widget .header")).to_have_css(
        "background-color", "rgb(11, 122, 83)"
    )
    panel = await widget.panel.bounding_box()
    assert panel is not None
    assert panel["x"] == 20 and panel["y"] + panel["height"] == 800 - 20, panel
    await widget.send("hello in green")
    await expect(widget.texts).to_have_text(["hello in green", "hello in green"])
    save_screenshot(await page.screenshot(), tmp_path, "widget-theme-dark-left.png")

    await widget.close.click()
    await expect(launcher).to_be_focused()


async def test_the_scheme_follows_the_system_unless_the_tag_fixes_it(
    gateway: Gateway, themed: Page, open_page: OpenPage, tmp_path: Path
) -> None:
    """On a dark system: no data-theme (auto) is dark, data-theme=light stays light. A light
    accent gets dark text on it; a value that is no colour is ignored (the default blue)."""
    auto = await open_page(themed(role="echo", open="true"), color_scheme="dark")
    await expect(Widget(auto, "Echo").panel).to_have_css("background-color", "rgb(28, 29, 34)")
    save_screenshot(await auto.screenshot(), tmp_path, "widget-theme-auto-dark.png")

    light = await open_page(
        themed(role="echo", open="true", theme="light", accent="#ffd54f"), color_scheme="dark"
    )
    widget = Widget(light, "Echo")
    await expect(widget.panel).to_have_css("background-color", "rgb(255, 255, 255)")
    await expect(widget.send_button).to_have_css("background-color", "rgb(255, 213, 79)")
    await expect(widget.send_button).to_have_css("color", "rgb(28, 29, 34)")
    save_screenshot(await light.screenshot(), tmp_path, "widget-theme-light-yellow.png")

    messages: list[str] = []
    bad = await open_page(themed(role="echo", accent="url(javascript:alert(1))"))
    bad.on("console", lambda message: messages.append(message.text))
    await expect(Widget(bad, "Echo").launcher).to_have_css("background-color", "rgb(40, 69, 184)")
