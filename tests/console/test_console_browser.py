"""The operator console in the machine's Chromium (Playwright), as an operator uses it: open it
and be sent to sign in; sign in with the operator token; read the overview; find Alice's
conversation by her Slack identity; see a message arrive live; view the conversation as Bob, who
was removed, and see his blackout; look at it on a phone in dark mode; sign out. The session
cookie is HttpOnly, SameSite=Strict, for /console only; the token is in no URL the browser asked
for. Screenshots of each page land in test-results/ (docs/console.md shows them).
"""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page, expect

from tests.api.conftest import TOKEN
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console

ALICE_SAYS = "Can someone reset my password? My laptop locked me out."
BOB_SAYS = "On it — I have asked the helpdesk."
HIDDEN = "Bob is off this one now; the helpdesk will take it from here."
LIVE = "Thanks, that worked!"


async def _scene(console: Console) -> str:
    """Alice (with her Slack identity) and Bob talk with an unserved role; Bob is removed, and
    Alice speaks after his removal. The thread's id."""
    api = console.api
    for slug, name in (("alice", "Alice Example"), ("bob", "Bob Builder")):
        made = await api.post(
            "/api/v1/persons", {"slug": slug, "display_name": name, "email": f"{slug}@example.com"}
        )
        assert made.status == 201, made.text
    linked = await api.post("/api/v1/persons/alice/identities", {"identity": "slack:t1:U1"})
    assert linked.status == 201, linked.text
    thread: str = (await api.thread("person:alice", "person:bob", "role:helpdesk"))["id"]
    await api.thread("person:alice", "role:echo")
    await api.say(thread, "person:alice", ALICE_SAYS)
    await api.say(thread, "person:bob", BOB_SAYS)
    await api.set_state(thread, "person:bob", "removed")
    await api.say(thread, "person:alice", HIDDEN)
    return thread


async def _shot(page: Page, tmp_path: Path, name: str) -> None:
    save_screenshot(await page.screenshot(full_page=True), tmp_path, name)


async def test_an_operator_signs_in_finds_alice_watches_live_views_as_bob_and_signs_out(
    console: Console, open_page: OpenPage, tmp_path: Path
) -> None:
    thread = await _scene(console)
    page = await open_page("about:blank", viewport={"width": 1100, "height": 800})
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))

    # Opening the console without a session leads to the login form.
    await page.goto(console.url + "/console")
    await expect(page).to_have_url(console.url + "/console/login")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    await _shot(page, tmp_path, "console-login.png")

    await page.get_by_label("Operator token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()

    await expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible()
    await expect(page.get_by_role("link", name="2 conversations: find one")).to_be_visible()
    [cookie] = [c for c in await page.context.cookies() if c["name"] == "rolecall_console"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
    assert cookie["value"] != TOKEN
    await _shot(page, tmp_path, "console-overview.png")

    # Alice's conversation, found by her Slack identity.
    nav = page.get_by_role("navigation", name="Console pages")
    await nav.get_by_role("link", name="Conversations").click()
    await page.get_by_label("Person or role").fill("slack:t1:U1")
    await page.get_by_role("button", name="Find", exact=True).click()
    await expect(page.get_by_role("heading", name="Conversations of person:alice")).to_be_visible()
    await _shot(page, tmp_path, "console-conversations.png")
    await page.get_by_role("link", name="person:alice, person:bob, role:helpdesk").click()

    await expect(page).to_have_url(f"{console.url}/console/conversations/{thread}")
    timeline = page.locator("#timeline")
    await expect(timeline.get_by_text(ALICE_SAYS)).to_be_visible()
    await expect(timeline.get_by_text(HIDDEN)).to_be_visible()  # the operator sees everything

    # A message posted now appears without a reload.
    live = page.get_by_role("status").filter(has_text="Live")
    await expect(live).to_have_text("Live: new events appear here as they are committed.")
    await console.api.say(thread, "person:alice", LIVE)
    await expect(timeline.get_by_text(LIVE)).to_be_visible()
    await _shot(page, tmp_path, "console-conversation.png")

    # As Bob: what was said after his removal is dark.
    await page.get_by_label("View as").select_option("person:bob")
    await page.get_by_role("button", name="View").click()
    await expect(page.get_by_text("Blackout begins: person:bob was removed here")).to_be_visible()
    await expect(timeline.get_by_text(BOB_SAYS)).to_be_visible()
    await expect(timeline.get_by_text(HIDDEN)).to_have_count(0)
    await expect(timeline.get_by_text(LIVE)).to_have_count(0)
    await _shot(page, tmp_path, "console-view-as.png")

    # The same session on a phone, in dark mode.
    phone = await open_page(
        f"{console.url}/console/conversations/{thread}",
        viewport={"width": 390, "height": 844},
        color_scheme="dark",
        storage_state=await page.context.storage_state(),
    )
    await expect(phone.locator("#timeline").get_by_text(LIVE)).to_be_visible()
    await _shot(phone, tmp_path, "console-phone-dark.png")

    # Signing out ends the session.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_text("You are signed out.")).to_be_visible()
    await page.goto(console.url + "/console")
    await expect(page).to_have_url(console.url + "/console/login")
    assert [c for c in await page.context.cookies() if c["name"] == "rolecall_console"] == []
    assert asked and not [url for url in asked if TOKEN in url]
