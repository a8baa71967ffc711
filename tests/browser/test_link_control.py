"""The widget's "Link" control (docs/widget.md, `POST /widget/v1/link-codes` and `/link`): a person
gets a one-time code in one widget and gives it in another browser's; that browser then continues
the person's conversation, with what it said before behind "Show earlier", and both are live.
Also: codes refused (unknown, not a code, used, too many tries) keep what was typed, and the
control from the keyboard on a narrow screen without the Clipboard API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Page, Response, expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot

ANN = "/page?role=concierge&user=ann-1&name=Ann+Example"
CODE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$")
UNKNOWN = "That code is not known. Check it, or get a new one."


def answer(text: str, *, greet: bool = False) -> str:
    """What the concierge answers to anything it has no skill for (greeting first, once)."""
    said = (
        f'You said: "{text}". Tell me "remember …" and I will keep it, '
        'ask "what do you remember?", or say "create a task: …".'
    )
    return f"Hello, I'm Concierge. {said}" if greet else said


class Linking:
    """The link control of a widget, found by role and name."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.toggle = page.get_by_role("button", name="Link another channel")
        self.region = page.get_by_role("region", name="Link another channel")
        self.get_code = self.region.get_by_role("button", name="Get a link code")
        self.code = self.region.get_by_text(CODE)
        self.copy = self.region.get_by_role("button", name="Copy code")
        self.code_box = self.region.get_by_role("textbox", name="Link code")
        self.use_code = self.region.get_by_role("button", name="Use code")

    async def redeem(self, *, press_enter: bool = False) -> Response:
        """Give what the code box holds; the gateway's answer."""
        async with self.page.expect_response(
            lambda response: (
                response.url.endswith("/widget/v1/link") and response.request.method == "POST"
            )
        ) as answered:
            if press_enter:
                await self.code_box.press("Enter")
            else:
                await self.use_code.click()
        return await answered.value


async def test_a_code_got_in_the_shop_brings_the_signed_users_conversation_to_a_visitor(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    # Ann, signed in at the shop, talks to the concierge.
    ann = Widget(
        await open_page(shop + ANN, permissions=["clipboard-read", "clipboard-write"]),
        "Concierge",
    )
    ann_said = ["ann in the shop", answer("ann in the shop", greet=True)]
    await ann.send(ann_said[0])
    await expect(ann.texts).to_have_text(ann_said)

    # Another browser: an anonymous visitor of the demo page, who said something already.
    page = await open_page(gateway.url + "/")
    visitor = Widget(page, "Concierge")
    visitor_said = ["the visitor was here", answer("the visitor was here", greet=True)]
    await visitor.send(visitor_said[0])
    await expect(visitor.texts).to_have_text(visitor_said)

    # Ann gets a code: the link row opens with focus in it.
    link = Linking(ann.page)
    await expect(link.region).to_be_hidden()
    await expect(link.toggle).to_have_attribute("aria-expanded", "false")
    await link.toggle.click()
    await expect(link.toggle).to_have_attribute("aria-expanded", "true")
    await expect(link.get_code).to_be_focused()
    await link.get_code.click()
    await expect(link.code).to_have_text(CODE)
    code = await link.code.text_content()
    assert code is not None
    await expect(link.region).to_contain_text(re.compile(r"It works once, for 15 minutes \(until"))
    await expect(link.region).to_contain_text(f"in Slack, send link {code} in the DM with the bot;")
    await expect(ann.status).to_have_text(re.compile(f"^Your link code is {code}\\."))
    await link.copy.click()
    await expect(link.region.get_by_text("Copied.")).to_be_visible()
    assert await ann.page.evaluate("navigator.clipboard.readText()") == code
    save_screenshot(await ann.panel.screenshot(), tmp_path, "widget-link.png")

    # The visitor gives it in their widget (from the keyboard: Enter in the code box).
    theirs = Linking(page)
    await theirs.toggle.click()
    await theirs.code_box.fill(code)
    response = await theirs.redeem(press_enter=True)
    assert response.status == 200

    # The visitor's widget is now Ann's conversation; what the visitor said is behind
    # "Show earlier", and the link row is closed with focus back in the composer.
    await expect(visitor.texts).to_have_text(ann_said)
    await expect(visitor.message("ann in the shop")).to_have_class("message mine")
    await expect(theirs.region).to_be_hidden()
    await expect(theirs.toggle).to_have_attribute("aria-expanded", "false")
    await expect(visitor.textbox).to_be_focused()
    await expect(visitor.error).to_be_hidden()
    await expect(visitor.status).to_have_text(
        "Linked: this chat continues the conversation of Ann Example."
    )
    await theirs.toggle.click()  # the code is spent: its box is empty again
    await expect(theirs.code_box).to_have_value("")
    await page.keyboard.press("Escape")
    await expect(theirs.region).to_be_hidden()
    await visitor.show_earlier.click()
    await expect(visitor.texts).to_have_text(visitor_said + ann_said)
    await expect(visitor.message("the visitor was here")).to_have_class("message mine")
    await expect(visitor.show_earlier).to_be_hidden()

    # Live both ways: the visitor's stream is Ann's conversation's now.
    from_demo = ["said on the demo page", answer("said on the demo page")]
    await visitor.send(from_demo[0])
    await expect(ann.texts).to_have_text(ann_said + from_demo)
    await expect(visitor.texts).to_have_text(visitor_said + ann_said + from_demo)
    from_shop = ["said in the shop again", answer("said in the shop again")]
    await ann.send(from_shop[0])
    await expect(visitor.texts).to_have_text(visitor_said + ann_said + from_demo + from_shop)
    await expect(ann.texts).to_have_text(ann_said + from_demo + from_shop)

    # The gateway agrees, and a reload of the demo page (the same visitor token) is Ann still.
    session = await gateway.widget_session("concierge", "ann-1", "Ann Example")
    person = f"person:{session['person']['slug']}"
    stored = await gateway.messages(session["conversation"], person)
    assert [m["text"] for m in stored] == ann_said + from_demo + from_shop
    await page.reload()
    await expect(visitor.texts).to_have_text(ann_said + from_demo + from_shop)
    await visitor.show_earlier.click()
    await expect(visitor.texts).to_have_text(visitor_said + ann_said + from_demo + from_shop)


async def test_a_wrong_code_is_refused_in_the_panel_and_stays_in_the_box(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    own = ["just me", answer("just me", greet=True)]
    await widget.send(own[0])
    await expect(widget.texts).to_have_text(own)
    link = Linking(page)
    await link.toggle.click()

    # Well formed, but no such code.
    await link.code_box.fill("ABCD-EFGH")
    response = await link.redeem()
    assert response.status == 404
    await expect(widget.error).to_have_text(UNKNOWN)
    await expect(widget.status).to_have_text(UNKNOWN)
    await expect(link.code_box).to_have_value("ABCD-EFGH")
    await expect(link.code_box).to_have_attribute("aria-invalid", "true")
    await expect(link.code_box).to_have_accessible_description(re.compile(f"^{UNKNOWN}"))
    await expect(link.code_box).to_be_focused()
    await expect(link.region).to_be_visible()
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-link-error.png")

    # Not a code at all.
    await link.code_box.fill("hello")
    response = await link.redeem(press_enter=True)
    assert response.status == 422
    await expect(widget.error).to_have_text(
        "That is not a link code: it has 8 letters and digits, like ABCD-EFGH."
    )
    await expect(link.code_box).to_have_value("hello")

    # A code used already (by another identity, through the operator API).
    status, someone = await gateway.call("POST", "/api/v1/persons", {"display_name": "Someone"})
    assert status == 201, someone
    status, minted = await gateway.call("POST", f"/api/v1/persons/{someone['slug']}/link-codes")
    assert status == 201, minted
    status, used = await gateway.call(
        "POST",
        "/api/v1/link-codes/redeem",
        {"code": minted["code"], "identity": "web:default:visitor:someone-else"},
    )
    assert status == 200, used
    await link.code_box.fill(minted["code"])
    response = await link.redeem()
    assert response.status == 404
    await expect(widget.error).to_have_text(
        "That code was used already. Get a new one, and give it here."
    )
    await expect(link.code_box).to_have_value(minted["code"])

    # Nothing was linked: the conversation is the visitor's own, and the next message clears
    # the error.
    await expect(widget.texts).to_have_text(own)
    more = ["still just me", answer("still just me")]
    await widget.send(more[0])
    await expect(widget.texts).to_have_text(own + more)
    await expect(widget.error).to_be_hidden()
    await expect(link.code_box).not_to_have_attribute("aria-invalid", "true")
    await expect(link.code_box).to_have_value(minted["code"])


# One attempt a minute after the burst of 10, so that the 11th is refused for about a minute.
@pytest.mark.parametrize("gateway_options", [{"widget_post_rate": 1}])
async def test_too_many_tries_say_when_to_try_again_and_keep_the_code(
    gateway: Gateway, open_page: OpenPage
) -> None:
    page = await open_page(gateway.url + "/")
    widget = Widget(page, "Concierge")
    link = Linking(page)
    await link.toggle.click()
    await link.code_box.fill("ABCD-EFGH")
    for _ in range(10):
        assert (await link.redeem()).status == 404
        await expect(widget.error).to_have_text(UNKNOWN)
    await link.code_box.fill("ABCD-EFGK")
    assert (await link.redeem()).status == 429
    await expect(widget.error).to_have_text(re.compile(r"^Too many tries — try again in \d+ s\.$"))
    await expect(link.code_box).to_have_value("ABCD-EFGK")


async def test_the_link_control_from_the_keyboard_on_a_narrow_screen_without_a_clipboard(
    gateway: Gateway, open_page: OpenPage, tmp_path: Path
) -> None:
    page = await open_page(gateway.url + "/", viewport={"width": 360, "height": 640})
    # A browser without the Clipboard API: no copy button, and nothing fails.
    await page.context.add_init_script(
        "Object.defineProperty(Navigator.prototype, 'clipboard', {get: () => undefined});"
    )
    await page.reload()
    assert await page.evaluate("navigator.clipboard === undefined")
    widget = Widget(page, "Concierge")
    widget.panel = page.get_by_role("dialog", name="Chat with Concierge")  # modal on a phone
    link = Linking(page)

    # The header still fits 360 px: the title, Link, Start fresh and Close all show.
    await expect(widget.panel.get_by_role("heading", name="Concierge")).to_be_in_viewport()
    for button in (link.toggle, widget.start_fresh, widget.close):
        await expect(button).to_be_in_viewport(ratio=1)
    title = await widget.panel.get_by_role("heading", name="Concierge").bounding_box()
    assert title is not None and title["width"] >= 80

    # Enter on "Link" opens the row and moves focus into it.
    await link.toggle.focus()
    await page.keyboard.press("Enter")
    await expect(link.region).to_be_visible()
    await expect(link.toggle).to_have_attribute("aria-expanded", "true")
    await expect(link.get_code).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(link.code).to_have_text(CODE)
    await expect(link.copy).to_be_hidden()
    await expect(widget.error).to_be_hidden()
    save_screenshot(await page.screenshot(), tmp_path, "widget-link-phone.png")

    # Tab goes on to the code box, then "Use code".
    await page.keyboard.press("Tab")
    await expect(link.code_box).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(link.use_code).to_be_focused()

    # Escape closes the row (not the chat) and gives focus back to "Link"; Escape again closes
    # the chat.
    await page.keyboard.press("Escape")
    await expect(link.region).to_be_hidden()
    await expect(link.toggle).to_have_attribute("aria-expanded", "false")
    await expect(link.toggle).to_be_focused()
    await expect(widget.panel).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(widget.panel).to_be_hidden()
    await expect(widget.launcher).to_be_focused()
