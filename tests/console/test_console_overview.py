"""The overview over real HTTP and in Chromium, after an echo round trip and a failing turn of
the `broken` role: the last hour's turns, latency and failures, the chart of the hour (an inline
SVG with a summary as its title and the minutes as a table), the deliveries per channel and the
replicas — and each figure's link to its list (runs, a role's failed runs, Slack, Endpoints)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.api.conftest import TOKEN
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console
from tests.waiting import eventually


async def _settled(console: Console, thread: str, status: str) -> dict[str, Any]:
    async def run() -> dict[str, Any] | None:
        runs = (await console.api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        done = runs and runs[0]["turns"] and not runs[0]["running"]
        return runs[0] if done and runs[0]["status"] == status else None

    return await eventually(run, what=f"the run of {thread} {status} after its turn")


async def _scene(console: Console) -> tuple[dict[str, Any], dict[str, Any]]:
    """An echo round trip and a failed turn of `broken`: their runs."""
    echo = (await console.api.thread("person:ann", "role:echo"))["id"]
    broken = (await console.api.thread("person:bob", "role:broken"))["id"]
    await console.api.say(echo, "person:ann", "hello")
    await console.api.say(broken, "person:bob", "hello")
    return await _settled(console, echo, "ready"), await _settled(console, broken, "failed")


def _cards(html: str) -> dict[str, str]:
    """Each card's heading and its words, tags dropped and spaces collapsed."""
    found = {}
    for heading, body in re.findall(r'<h2 id="c-[a-z]+">([^<]+)</h2>(.*?)</section>', html, re.S):
        found[heading] = " ".join(re.sub(r"<[^>]+>", " ", body).split())
    return found


async def test_the_overview_shows_the_hour_its_failures_and_links_each_figure(
    console: Console,
) -> None:
    _, failed = await _scene(console)
    client = await console.signed_in()
    page = await client.get("/console")
    assert page.status == 200, page.text
    cards = _cards(page.said)

    assert re.match(
        r"2 0\.03 a minute p50 duration [\d.]+ m?s p95 duration", cards["Turns in the last hour"]
    )
    assert re.match(
        r"1 turn failed role:broken ?: 1 turn in 1 run", cards["Failures in the last hour"]
    )
    assert '<a href="/console/runs?role=broken&amp;status=failed">' in page.text
    assert '<a href="/console/runs">2<span class="visually-hidden"> runs: list them' in page.text
    assert (
        '<a href="/console/slack">0' in page.text and '<a href="/console/endpoints">0' in page.text
    )
    assert "No role's Slack delivery has started." in cards["Slack deliveries"]
    assert re.search(r"active 0 parked 0 disabled 0 events waiting 0", cards["Endpoints"])
    assert cards["Widget streams"].startswith("0 open items queued 0")
    assert "1 live of 1" in cards["Replicas"]
    assert "not built yet" not in page.plain

    # The chart: its title says what it shows; a bar per busy minute; the numbers as a table.
    svg = re.search(r'<svg class="hour-chart".*?</svg>', page.text, re.S)
    assert svg is not None
    drawn = svg.group(0)
    assert 'role="img" aria-labelledby="hour-title"' in drawn
    title = re.search(r'<title id="hour-title">([^<]+)</title>', drawn)
    assert title is not None
    assert re.fullmatch(
        r"Turns per minute over the last hour, from \d\d:\d\d to \d\d:\d\d UTC: 2 turns, "
        r"1 failed; the busiest minute, \d\d:\d\d, had [12] turns?\.",
        title.group(1),
    ), title.group(1)
    assert drawn.count('<rect class="failed"') == 1
    assert 1 <= drawn.count('<rect class="turns"') <= 2  # one minute, or two across a boundary
    rows = re.findall(
        r"<tr><th scope=\"row\"><time[^>]*>[\d:]+</time></th><td>(\d+)</td><td>(\d+)</td></tr>",
        page.text,
    )
    assert sum(int(t) for t, _ in rows) == 2 and sum(int(f) for _, f in rows) == 1

    # The failed run is where the figure says.
    runs = await client.get("/console/runs?role=broken&status=failed")
    assert runs.status == 200 and failed["id"] in runs.text


async def test_in_chromium_the_chart_is_named_for_screen_readers_and_follows_dark_mode(
    console: Console, open_page: OpenPage, tmp_path: Path
) -> None:
    await _scene(console)
    page = await open_page(
        console.url + "/console/login", viewport={"width": 390, "height": 844}, color_scheme="dark"
    )
    await page.get_by_label("Operator token").fill(TOKEN)
    await page.get_by_role("button", name="Sign in").click()

    chart = page.get_by_role("img", name=re.compile(r"^Turns per minute over the last hour"))
    await expect(chart).to_be_visible()
    await expect(chart).to_have_accessible_name(re.compile(r"2 turns, 1 failed"))
    failed_bar = page.locator(".hour-chart rect.failed")
    turns_bar = page.locator(".hour-chart rect.turns").first
    # Dark mode: the bars take the dark palette's colours (console.css), not the light ones.
    assert await failed_bar.evaluate("e => getComputedStyle(e).fill") == "rgb(242, 139, 130)"
    assert await turns_bar.evaluate("e => getComputedStyle(e).fill") == "rgb(138, 180, 248)"
    await page.get_by_text("The minutes with turns, as a table").click()
    table = page.get_by_role("table")
    await expect(table.get_by_role("columnheader", name="Failed")).to_be_visible()
    save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-overview-dark.png")

    desktop = await open_page(
        console.url + "/console",
        viewport={"width": 1100, "height": 800},
        storage_state=await page.context.storage_state(),
    )
    await expect(desktop.get_by_role("img", name=re.compile("2 turns, 1 failed"))).to_be_visible()
    save_screenshot(await desktop.screenshot(full_page=True), tmp_path, "console-overview-hour.png")

    await page.get_by_role("link", name=re.compile(r"role:broken: 1 turn in 1 run")).click()
    await expect(
        page.get_by_role("heading", name="Runs of role:broken, failed only")
    ).to_be_visible()
