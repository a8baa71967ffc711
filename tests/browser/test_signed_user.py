"""A signed-in user of another site (the shop, another origin): the same conversation on every page
and every channel, live; retractions; and the widget untouched by the shop's hostile CSS."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot

ANN = "/page?role=echo&user=ann-1&name=Ann+Example"


async def test_two_pages_of_one_signed_user_share_the_conversation_live(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    first = Widget(await open_page(shop + ANN), "Echo")
    await first.send("hello from the first tab")
    await expect(first.texts).to_have_text(["hello from the first tab"] * 2)

    # Another browser altogether (its own storage): only the signed user token joins them.
    second = Widget(await open_page(shop + ANN), "Echo")
    await expect(second.texts).to_have_text(["hello from the first tab"] * 2)
    await expect(second.message("hello from the first tab").first).to_have_class("message mine")

    await first.send("and a second one")
    expected = ["hello from the first tab"] * 2 + ["and a second one"] * 2
    await expect(second.texts).to_have_text(expected)  # live, without a reload
    await expect(first.texts).to_have_text(expected)
    await second.send("from the second tab")
    await expect(first.texts).to_have_text(
        [*expected, "from the second tab", "from the second tab"]
    )


async def test_a_message_from_another_channel_arrives_live_marked_with_its_channel(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    widget = Widget(await open_page(shop + ANN), "Echo")
    await widget.send("typed in the widget")
    await expect(widget.texts).to_have_text(["typed in the widget"] * 2)

    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    person = f"person:{session['person']['slug']}"
    await gateway.say(session["conversation"], person, "sent through the API")

    await expect(widget.texts).to_have_text(
        ["typed in the widget"] * 2 + ["sent through the API"] * 2
    )
    from_api, echoed = (
        widget.message("sent through the API").nth(0),
        widget.message("sent through the API").nth(1),
    )
    await expect(from_api.locator(".via")).to_have_text("via API")
    await expect(from_api.locator(".author")).to_have_text("You")  # the same person
    await expect(from_api).to_have_class("message mine")
    await expect(echoed.locator(".author")).to_have_text("Echo")
    await expect(echoed.locator(".via")).to_have_count(0)  # an agent's message has no channel tag
    await expect(widget.message("typed in the widget").locator(".via")).to_have_count(0)
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget.png")


async def test_a_retraction_shows_live_and_after_a_reload(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    await widget.send("my card number is 1234")
    await expect(widget.texts).to_have_text(["my card number is 1234"] * 2)
    await widget.send("sorry, ignore that")
    await expect(widget.texts).to_have_text(
        ["my card number is 1234"] * 2 + ["sorry, ignore that"] * 2
    )

    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    person = f"person:{session['person']['slug']}"
    first = (await gateway.messages(session["conversation"], person))[0]
    assert first["text"] == "my card number is 1234"
    await gateway.retract(session["conversation"], first["id"], person)

    retracted = "This message was retracted"
    expected = [retracted, "my card number is 1234"] + ["sorry, ignore that"] * 2
    await expect(widget.texts).to_have_text(expected)
    await expect(widget.messages.first).to_have_attribute("data-retracted", "true")
    await page.reload()
    await expect(widget.texts).to_have_text(expected)


async def test_an_expired_user_token_is_refused_in_the_panel(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    widget = Widget(await open_page(shop + ANN + "&expired=1"), "echo")
    await expect(widget.error).to_have_text(re.compile(r"user token is refused: it has expired"))
    await expect(widget.messages).to_have_count(0)


async def test_the_shops_css_does_not_reach_into_the_widget_nor_the_widgets_out(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    # The shop hides every button and paints everything red and huge, !important.
    await expect(page.get_by_text("Buy")).to_be_hidden()
    await expect(page.get_by_role("heading", name="The shop")).to_have_css("font-size", "40px")
    await expect(widget.send_button).to_be_visible()
    await expect(widget.launcher).to_be_visible()
    await expect(widget.textbox).to_have_css("font-size", "15px")
    await expect(widget.send_button).to_have_css("color", "rgb(255, 255, 255)")
    # The widget's own rules (box-sizing on everything, among others) stay in its shadow root.
    await expect(page.get_by_role("heading", name="The shop")).to_have_css(
        "box-sizing", "content-box"
    )
