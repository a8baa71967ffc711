"""The console's People pages: finding people, a person's page, and each change through its
confirmation — over HTTP as a browser signs in, and in Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.api.conftest import TOKEN
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console


async def _person(console: Console, slug: str, name: str, *identities: str) -> dict[str, Any]:
    made = await console.api.post("/api/v1/persons", {"slug": slug, "display_name": name})
    assert made.status == 201, made.body
    for identity in identities:
        linked = await console.api.post(
            f"/api/v1/persons/{slug}/identities", {"identity": identity}
        )
        assert linked.status == 201, linked.body
    return (await console.api.get(f"/api/v1/persons/{slug}")).body  # type: ignore[no-any-return]


async def _trail(console: Console, action: str) -> list[dict[str, Any]]:
    return (await console.api.get(f"/api/v1/audit?action={action}")).body["records"]  # type: ignore[no-any-return]


async def test_people_are_listed_with_their_identities_and_found_by_an_identity(
    console: Console,
) -> None:
    await _person(console, "ann", "Ann Lee", "slack:T1:U1", "web:site:7")
    await _person(console, "bob", "Bob Ray")
    client = await console.signed_in()

    everyone = await client.get("/console/people")

    assert everyone.status == 200
    assert 'href="/console/people/ann"' in everyone.text
    assert 'href="/console/people/bob"' in everyone.text
    assert "Ann Lee ann — 2 active" in everyone.plain
    assert "Bob Ray bob — 0 active" in everyone.plain
    found = await client.get("/console/people?q=slack:T1:U1")
    assert 'href="/console/people/ann"' in found.text
    assert 'href="/console/people/bob"' not in found.text
    none = await client.get("/console/people?q=nobody-at-all")
    assert "Nobody matches “nobody-at-all”." in none.plain


async def test_the_people_list_is_paged_by_slug(console: Console) -> None:
    for n in range(26):
        await _person(console, f"p{n:02d}", f"Person {n}")
    client = await console.signed_in()

    first = await client.get("/console/people")

    assert 'href="/console/people/p24"' in first.text
    assert 'href="/console/people/p25"' not in first.text
    assert 'rel="next" href="/console/people?after=p24"' in first.text
    second = await client.get("/console/people?after=p24")
    assert 'href="/console/people/p25"' in second.text
    assert 'href="/console/people/p00"' not in second.text
    assert 'rel="next"' not in second.text


async def test_a_persons_page_shows_identities_and_conversations(console: Console) -> None:
    await _person(console, "ann", "Ann Lee", "slack:T1:U1")
    thread = (await console.api.thread("person:ann", "role:echo"))["id"]
    client = await console.signed_in()

    page = await client.get("/console/people/ann")

    assert page.status == 200
    assert "Ann Lee person:ann" in page.plain
    assert "slack:t1:U1" in page.plain
    assert f'href="/console/conversations/{thread}"' in page.text
    assert 'href="/console/people/ann/link-code"' in page.text
    missing = await client.get("/console/people/nobody")
    assert missing.status == 404 and "No person with slug 'nobody'." in missing.plain


async def test_linking_an_identity_is_confirmed_first_and_audited(console: Console) -> None:
    await _person(console, "ann", "Ann Lee")
    await _person(console, "bob", "Bob Ray", "slack:T1:U2")
    client = await console.signed_in()

    asked = await client.get("/console/people/ann/link?identity=web:site:9")

    assert asked.status == 200
    assert "The identity web:site:9 will be linked to Ann Lee (person:ann)" in asked.plain
    assert (await console.api.get("/api/v1/persons/ann")).body["identities"] == []
    assert (await client.post("/console/people/ann/link", {"identity": "web:site:9"})).status == 403
    done = await client.post(
        "/console/people/ann/link", {"identity": "web:site:9", "csrf": asked.csrf}
    )
    assert done.status == 303 and done.location == "/console/people/ann?done=linked"
    shown = await client.get(done.location)
    assert "The identity is linked." in shown.plain and "web:site:9" in shown.plain
    records = await _trail(console, "person.link")
    assert [(r["actor"], r["detail"]["slug"]) for r in records][-1] == ("default", "ann")

    taken = await client.post(
        "/console/people/ann/link", {"identity": "slack:T1:U2", "csrf": asked.csrf}
    )
    assert taken.status == 409
    assert "slack:t1:U2" in taken.plain or "slack:T1:U2" in taken.plain
    assert "Link the identity" in taken.plain  # the confirmation again, with the refusal
    bob = (await console.api.get("/api/v1/persons/bob")).body
    assert [i["identity"] for i in bob["identities"]] == ["slack:t1:U2"]


async def test_a_link_code_is_shown_once_and_links_an_identity(console: Console) -> None:
    await _person(console, "ann", "Ann Lee")
    client = await console.signed_in()
    asked = await client.get("/console/people/ann/link-code")
    assert "The code is shown once" in asked.plain

    made = await client.post("/console/people/ann/link-code", {"csrf": asked.csrf})

    assert made.status == 200 and "This code is shown once" in made.plain
    shown = re.search(r'aria-label="The link code">([^<]+)<', made.text)
    assert shown is not None
    code = shown.group(1)
    redeemed = await console.api.post(
        "/api/v1/link-codes/redeem", {"code": code, "identity": "web:site:3"}
    )
    assert redeemed.status == 200 and redeemed.body["slug"] == "ann"
    assert made.headers["Cache-Control"] == "no-store"
    assert code not in (await client.get("/console/people/ann")).text


async def test_a_merge_lists_what_moves_then_moves_it(console: Console) -> None:
    await _person(console, "ann", "Ann Lee", "slack:T1:U1")
    await _person(console, "bob", "Bob Ray", "slack:T1:U2", "web:site:5")
    bobs = (await console.api.thread("person:bob", "role:echo"))["id"]
    client = await console.signed_in()

    asked = await client.get("/console/people/bob/merge?into=ann")

    assert asked.status == 200 and "Merge person:bob into person:ann" in asked.plain
    assert "identity slack:t1:U2" in asked.plain and "identity web:site:5" in asked.plain
    assert "conversation with person:bob, role:echo" in asked.plain
    assert (await console.api.get("/api/v1/persons/bob")).body["state"] == "active"
    done = await client.post("/console/people/bob/merge", {"into": "ann", "csrf": asked.csrf})

    assert done.status == 303 and done.location == "/console/people/ann?done=merged"
    bob = (await console.api.get("/api/v1/persons/bob")).body
    assert bob["state"] == "merged" and bob["merged_into"] == "ann"
    moved = (await console.api.get(f"/api/v1/threads/{bobs}")).body
    assert "person:ann" in [p["address"] for p in moved["participants"]]
    assert [r["detail"]["slug"] for r in await _trail(console, "person.merge")] == ["bob"]
    itself = await client.get("/console/people/ann/merge?into=ann")
    assert "A person cannot be merged into themselves." in itself.plain
    assert "<form" not in itself.text.split("<main", 1)[1]


async def test_deactivate_and_reactivate_through_their_confirmations(console: Console) -> None:
    await _person(console, "ann", "Ann Lee")
    client = await console.signed_in()
    asked = await client.get("/console/people/ann/deactivate")
    assert "Nothing is deleted" in asked.plain

    done = await client.post("/console/people/ann/deactivate", {"csrf": asked.csrf})

    assert done.location == "/console/people/ann?done=deactivated"
    assert (await console.api.get("/api/v1/persons/ann")).body["state"] == "deactivated"
    page = await client.get(done.location)
    assert "The person is deactivated." in page.plain and "Reactivate…" in page.plain
    again = await client.post("/console/people/ann/activate", {"csrf": asked.csrf})
    assert again.location == "/console/people/ann?done=activated"
    assert (await console.api.get("/api/v1/persons/ann")).body["state"] == "active"


async def test_erasure_lists_what_goes_then_erases(console: Console) -> None:
    await _person(console, "ann", "Ann Lee", "web:site:1")
    thread = (await console.api.thread("person:ann", "role:echo"))["id"]
    await console.api.say(thread, "person:ann", "my secret")
    client = await console.signed_in()

    asked = await client.get("/console/people/ann/erase")

    assert "will be erased, for good" in asked.plain
    assert "1 conversations whose messages become tombstones" in asked.plain
    assert "1 identities" in asked.plain
    done = await client.post("/console/people/ann/erase", {"csrf": asked.csrf})
    assert done.location == "/console/people/ann?done=erased"
    assert (await console.api.get("/api/v1/persons/ann")).body["state"] == "erased"
    page = await client.get(done.location)
    assert "The person is erased." in page.plain and "Erase…" not in page.plain
    assert [r["detail"]["slug"] for r in await _trail(console, "person.erase")] == ["ann"]


async def test_an_unknown_action_is_a_sentence(console: Console) -> None:
    await _person(console, "ann", "Ann Lee")
    client = await console.signed_in()

    page = await client.get("/console/people/ann/promote")

    assert page.status == 404 and "The console cannot 'promote' a person." in page.plain
    await _person(console, "carl", "Carl Oe")
    bare = await client.get("/console/people/carl/merge?into=ann")
    assert "person:carl has no identity" in bare.plain and "Merge into" not in bare.plain
    empty = await client.get("/console/people/ann/link?identity=")
    assert empty.status == 422 and "Give the identity to link" in empty.plain


async def test_in_chromium_an_operator_finds_a_person_and_deactivates_them(
    console: Console, open_page: OpenPage, tmp_path: Path
) -> None:
    await _person(console, "alice", "Alice Example", "slack:T123:U456")
    await _person(console, "bob", "Bob Ray", "web:example.com:42")
    await console.api.thread("person:alice", "role:echo")
    page = await open_page(console.url + "/console/login", viewport={"width": 1100, "height": 800})
    await page.get_by_label("Operator token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()

    nav = page.get_by_role("navigation", name="Console pages")
    await nav.get_by_role("link", name="People").click()
    await expect(page.get_by_role("heading", name="Everyone")).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-people.png")
    await page.get_by_label("Find a person").fill("slack:T123:U456")
    await page.get_by_role("button", name="Find", exact=True).click()
    await page.get_by_role("link", name="Alice Example").click()
    await expect(page.get_by_text("slack:t123:U456", exact=True)).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-person.png")
    await page.get_by_role("link", name="Deactivate…").click()
    await expect(page.get_by_role("heading", name="Deactivate person:alice")).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-person-confirm.png")
    await page.get_by_role("button", name="Deactivate").click()
    await expect(page.get_by_role("status")).to_have_text("The person is deactivated.")
