"""An anonymous visitor whose browser identity is linked, meanwhile, into a person known from
another channel: the open widget moves on to that person's conversation at its next step, and
what the visitor said is behind "Show earlier" (the visitor's conversation, kept as the
predecessor of the person's)."""

from __future__ import annotations

from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Widget
from tests.waiting import eventually


async def test_a_visitor_linked_into_a_known_person_continues_as_them(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    # Bob talks to echo through the API (another channel).
    status, bob = await gateway.call("POST", "/api/v1/persons", {"display_name": "Bob"})
    assert status == 201, bob
    status, thread = await gateway.call(
        "POST", "/api/v1/threads", {"participants": [bob["address"], "role:echo"]}
    )
    assert status in (200, 201), thread
    await gateway.say(thread["id"], bob["address"], "bob via the API")

    async def echoed() -> bool:
        return len(await gateway.messages(thread["id"], bob["address"])) == 2

    await eventually(echoed)

    # An anonymous visitor of the shop says something in the widget.
    widget = Widget(await open_page(shop + "/page?role=echo"), "Echo")
    await widget.send("a visitor says hi")
    await expect(widget.texts).to_have_text(["a visitor says hi"] * 2)

    # The operator links the visitor's browser identity to Bob with a link code.
    status, people = await gateway.call("GET", "/api/v1/persons")
    assert status == 200, people
    visitor = next(p for p in people["persons"] if p["slug"] != bob["slug"])
    status, visitor = await gateway.call("GET", f"/api/v1/persons/{visitor['slug']}")
    assert status == 200, visitor
    [identity] = [i["identity"] for i in visitor["identities"]]
    status, code = await gateway.call("POST", f"/api/v1/persons/{bob['slug']}/link-codes")
    assert status == 201, code
    status, linked = await gateway.call(
        "POST", "/api/v1/link-codes/redeem", {"code": code["code"], "identity": identity}
    )
    assert status == 200, linked

    # The widget's next message finds its session gone; the new session is Bob's: his
    # conversation replaces the visitor's in the panel, and the message goes there.
    await widget.send("after the link")
    expected = ["bob via the API"] * 2 + ["after the link"] * 2
    await expect(widget.texts).to_have_text(expected)
    await expect(widget.message("bob via the API").first.locator(".via")).to_have_text("via API")
    await expect(widget.message("bob via the API").first).to_have_class("message mine")
    await expect(widget.textbox).to_have_value("")
    await expect(widget.error).to_be_hidden()
    assert [m["text"] for m in await gateway.messages(thread["id"], bob["address"])] == expected

    await widget.show_earlier.click()
    await expect(widget.texts).to_have_text(["a visitor says hi"] * 2 + expected)
    await expect(widget.message("a visitor says hi").first).to_have_class("message mine")
    await expect(widget.show_earlier).to_be_hidden()


async def test_a_visitor_who_signs_in_keeps_what_they_said(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    page = await open_page(shop + "/page?role=echo")
    widget = Widget(page, "Echo")
    await widget.send("said before signing in")
    await expect(widget.texts).to_have_text(["said before signing in"] * 2)

    # The same browser, now signed in at the shop: the widget offers both tokens.
    await page.goto(shop + "/page?role=echo&user=cleo-7&name=Cleo")
    await expect(widget.texts).to_have_text(["said before signing in"] * 2)
    await widget.send("said after")
    await expect(widget.texts).to_have_text(["said before signing in"] * 2 + ["said after"] * 2)
    session = await gateway.widget_session("echo", "cleo-7", "Cleo")
    person = f"person:{session['person']['slug']}"
    assert [m["text"] for m in await gateway.messages(session["conversation"], person)] == (
        ["said before signing in"] * 2 + ["said after"] * 2
    )
