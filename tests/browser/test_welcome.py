"""What a first-time visitor sees before anyone speaks: the role's avatar (its image, or its
initials), its name, its greeting and its suggested prompts (the manifest's `widget:` section);
one click on a prompt sends it. The greeting stays at the top once the visitor talks; the
prompts go, and come back with "Start fresh". A returning visitor sees the conversation."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from playwright.async_api import expect

from core.model.roles import Role
from core.model.roles.manifests import load_role
from tests.browser import harness
from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot
from tests.serving import serve

CONCIERGE = load_role(harness.REPO / "manifests" / "roles" / "concierge.yaml")
RECALL_REPLY = 'Hello, I\'m Concierge. Nothing yet. Tell me "remember …" and I will keep it.'
# A 1x1 PNG, served from an origin of its own like an operator's image host.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture
async def images() -> AsyncIterator[str]:
    """An image host: `/desk.png` is an image, anything else a 404."""

    async def image(request: web.Request) -> web.Response:
        if request.path != "/desk.png":
            raise web.HTTPNotFound()
        return web.Response(body=PIXEL, content_type="image/png")

    app = web.Application()
    app.router.add_get("/{name}", image)
    async with serve(app) as server:
        yield str(server.make_url("")).rstrip("/")


@pytest.fixture(autouse=True)
def roles(monkeypatch: pytest.MonkeyPatch, images: str) -> None:
    """The gateway serves the shipped concierge manifest, and two roles with avatar images (one
    that loads, one that does not)."""
    monkeypatch.setitem(harness.ROLES, "concierge", CONCIERGE)
    for name, avatar in (("desk", f"{images}/desk.png"), ("broken", f"{images}/missing.png")):
        role = Role.model_validate(
            {
                "name": name,
                "display_name": "Front Desk",
                "runtime": {"kind": "builtin", "agent": "echo"},
                "widget": {"greeting": "Ask me *anything*.", "avatar": avatar},
            }
        )
        monkeypatch.setitem(harness.ROLES, name, role)


async def test_a_first_time_visitor_sees_the_role_its_greeting_and_suggestions(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    """The demo page greets a new visitor as the manifest says; a suggestion is sent by one
    click and answered; the greeting stays, the suggestions go."""
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    welcome = page.locator("rolecall-widget .welcome")
    await expect(welcome).to_be_visible()
    await expect(welcome.locator(".avatar")).to_have_text("C")
    await expect(welcome.locator(".welcome-name")).to_have_text("Concierge")
    greeting = welcome.locator(".greeting")
    await expect(greeting).to_contain_text("I keep notes for you")
    await expect(greeting.locator("strong")).to_have_text("concierge")  # Markdown, like messages
    await expect(greeting.locator("em")).to_have_text("remember")
    suggestions = widget.panel.get_by_role("list", name="Suggested messages").get_by_role("button")
    await expect(suggestions).to_have_text(
        ["remember that my desk is 4B", "what do you remember?", "create a task: order more coffee"]
    )
    await expect(widget.panel.locator("header .avatar")).to_have_text("C")
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-welcome.png")

    await suggestions.get_by_text("what do you remember?").click()
    await expect(widget.texts).to_have_text(["what do you remember?", RECALL_REPLY])
    await expect(widget.message("what do you remember?")).to_have_class("message mine")
    await expect(suggestions).to_have_count(0)
    await expect(greeting).to_be_visible()  # the role's first words stay at the top
    await expect(widget.textbox).to_have_value("")
    await expect(widget.textbox).to_be_focused()


async def test_a_returning_visitor_sees_the_conversation_and_start_fresh_greets_again(
    gateway: Gateway, open_page: OpenPage
) -> None:
    """After a reload the conversation shows, without the welcome; "Start fresh" empties the
    view, and the welcome with its suggestions is back."""
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    welcome = page.locator("rolecall-widget .welcome")
    await widget.send("what do you remember?")
    await expect(widget.texts).to_have_count(2)

    await page.reload()
    await expect(widget.texts).to_have_count(2)
    await expect(welcome).to_be_hidden()

    await widget.start_fresh.click()
    await page.get_by_role("button", name="Yes, start over").click()
    await expect(widget.texts).to_have_count(0)
    await expect(welcome).to_be_visible()
    await expect(welcome.locator(".suggestions button")).to_have_count(3)
    await widget.show_earlier.click()
    await expect(widget.texts).to_have_count(2)
    await expect(welcome).to_be_hidden()  # the archive comes before any greeting


async def test_the_avatar_is_the_roles_image_or_its_initials_when_the_image_fails(
    gateway: Gateway, shop: str, open_page: OpenPage, images: str
) -> None:
    """An avatar image from the operator's image host is shown in the header and the welcome;
    one that does not load gives way to the display name's initials."""
    page = await open_page(shop + "/page?role=desk&user=ann-1&name=Ann")
    widget = Widget(page, "Front Desk")
    avatars = page.locator("rolecall-widget .avatar img")
    await expect(avatars).to_have_count(2)
    for n in range(2):
        await expect(avatars.nth(n)).to_have_attribute("src", f"{images}/desk.png")
        await expect(avatars.nth(n)).to_have_attribute("alt", "")
        loaded = await avatars.nth(n).evaluate("image => image.complete && image.naturalWidth")
        assert loaded == 1
    await expect(widget.panel.locator(".greeting em")).to_have_text("anything")

    broken = await open_page(shop + "/page?role=broken&user=ann-1&name=Ann")
    avatar = broken.locator("rolecall-widget .welcome .avatar")
    await expect(avatar).to_have_text("FD")
    await expect(avatar.locator("img")).to_have_count(0)
    await expect(broken.locator("rolecall-widget header .avatar")).to_have_text("FD")
