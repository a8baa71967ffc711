"""The console's endpoints over real HTTP (`gateway.console.endpoints`), with a receiver on
127.0.0.1 that refuses (503) until told otherwise: the list with each endpoint's status,
position, backlog and last failure; a parked endpoint's page saying what parked it, with its
delivery log, failures only, paged; replay from a position after a page that says what it does,
through the operator API as the signed-in operator, refused without the session's CSRF token,
and an API refusal shown as a sentence. And in Chromium: the tasks and endpoints pages, and a
parked endpoint replayed, with screenshots.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import expect

from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.browser.harness import OpenPage, save_screenshot
from tests.console.conftest import Console
from tests.console.test_console_tasks import conversation_run, make_task, watch
from tests.outbound.conftest import Receiver
from tests.serving import free_port, serve
from tests.settings import make_settings
from tests.waiting import eventually

ANN, BO = "person:ann", "person:bo"
Start = Callable[..., AbstractAsyncContextManager[Console]]


@pytest.fixture
def start(tmp_path: Path) -> Start:
    """Starts the whole gateway serving `echo`, delivering to endpoints on loopback with quick
    retries; `park_after` failures in a row park one."""

    @asynccontextmanager
    async def started(park_after: int = 3) -> AsyncIterator[Console]:
        port = free_port()
        settings = make_settings(
            tmp_path, port=port, public_url=f"http://127.0.0.1:{port}",
            endpoints_allow_private=True, endpoints_park_after=park_after,
            endpoints_backoff_base=0.001, endpoints_backoff_cap=0.01,
        )  # fmt: skip
        app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO})
        sessions: list[aiohttp.ClientSession] = []
        async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
            try:
                yield Console(server, Api(server, http), tmp_path / "t.db", sessions)
            finally:
                for session in sessions:
                    await session.close()

    return started


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as started:
        yield started


async def register(console: Console, url: str, **fields: Any) -> dict[str, Any]:
    reply = await console.api.post("/api/v1/endpoints", {"url": url, **fields})
    assert reply.status == 201, reply.text
    made: dict[str, Any] = reply.body
    return made


async def parked(console: Console, endpoint_id: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        shown = (await console.api.get(f"/api/v1/endpoints/{endpoint_id}")).body
        return shown if shown["status"] == "parked" else None

    return await eventually(found, what="the endpoint parked")


async def a_parked_endpoint(console: Console, receiver: Receiver) -> tuple[dict[str, Any], ...]:
    """An endpoint parked on the first of two messages (its receiver answers 503), and the
    messages."""
    receiver.answer_always("/down", 503)
    made = await register(console, receiver.url("/down"), kinds=["message"])
    thread = await console.api.thread(ANN, BO)
    first = await console.api.say(thread["id"], ANN, "one")
    second = await console.api.say(thread["id"], ANN, "two")
    return await parked(console, made["id"]), first, second


async def test_endpoints_are_listed_with_status_position_backlog_and_last_failure(
    start: Start, receiver: Receiver
) -> None:
    async with start() as console:
        fine = await register(console, receiver.url("/fine"), kinds=["task"])
        down, first, _ = await a_parked_endpoint(console, receiver)
        client = await console.signed_in()

        page = await client.get("/console/endpoints")

        assert page.status == 200
        said = page.plain
        assert "1 active, 1 parked, 0 disabled." in said
        assert f"{receiver.url('/fine')} active tasks {fine['task_position']} 0 none" in said
        parked_row = f"{receiver.url('/down')} parked (3 failed in a row) "
        assert parked_row + f"timeline {first['position'] - 1} 2 HTTP 503" in said
        assert f'href="/console/endpoints/{down["id"]}"' in page.text


async def test_a_parked_endpoints_page_says_what_parked_it_and_shows_its_log(
    start: Start, receiver: Receiver
) -> None:
    async with start() as console:
        down, first, _ = await a_parked_endpoint(console, receiver)
        client = await console.signed_in()

        page = await client.get(f"/console/endpoints/{down['id']}")

        assert page.status == 200
        said = page.plain
        assert "Status parked" in said
        assert "parked after 3 failed attempts in a row; the last: HTTP 503" in said
        parked_by = re.sub(r"\(\s+", "(", said)  # `plain` puts a space for the <code> tag
        assert (
            "after 3 failed attempts in a row; the last, attempt 3 (timeline.message at "
            f"position {first['position']}), got HTTP 503. It gets nothing until it is replayed."
        ) in parked_by
        assert f"Timeline position {first['position'] - 1} (2 pending)" in said
        log = said.split("Delivery log", 1)[1]
        assert re.findall(r" (\d) [0-9-]+ [0-9:]+ UTC timeline\.message", log) == ["3", "2", "1"]
        assert "failed: HTTP 503 parked (3 in a row)" in log
        assert "failed: HTTP 503 active (1 in a row)" in log
        assert 'href="/console/endpoints/' + down["id"] + '?failed=1"' in page.text


async def test_the_delivery_log_is_paged_and_filtered(start: Start, receiver: Receiver) -> None:
    async with start(park_after=52) as console:
        receiver.answer_always("/down", 503)
        made = await register(console, receiver.url("/down"), kinds=["message"])
        thread = await console.api.thread(ANN, BO)
        await console.api.say(thread["id"], ANN, "one")
        await parked(console, made["id"])
        client = await console.signed_in()

        newest = await client.get(f"/console/endpoints/{made['id']}")

        assert re.findall(r'<th scope="row">(\d+)</th>', newest.text)[:2] == ["52", "51"]
        assert len(re.findall(r'<th scope="row">(\d+)</th>', newest.text)) == 50
        older_link = f'href="/console/endpoints/{made["id"]}?before=3"'
        assert older_link in newest.text
        older = await client.get(f"/console/endpoints/{made['id']}?before=3")
        assert re.findall(r'<th scope="row">(\d+)</th>', older.text) == ["2", "1"]
        assert "Newest attempts" in older.plain and "Older attempts" not in older.plain
        failed = await client.get(f"/console/endpoints/{made['id']}?failed=1")
        assert "Delivery log: failures only" in failed.plain and "Every attempt" in failed.plain
        assert "?before=3&amp;failed=1" in failed.text


async def test_replay_is_confirmed_first_then_delivers_again(
    start: Start, receiver: Receiver
) -> None:
    async with start() as console:
        down, first, second = await a_parked_endpoint(console, receiver)
        client = await console.signed_in()
        path = f"/console/endpoints/{down['id']}/replay"

        asked = await client.get(path + "?from_position=")

        assert asked.status == 200 and "Replay this endpoint?" in asked.plain
        assert "It is parked now (parked after 3 failed attempts" in asked.plain
        assert "it becomes active again with no failures in a row." in asked.plain
        assert (
            f"It goes on with timeline events where it stopped: after position "
            f"{first['position'] - 1} (2 events of the kinds it wants wait)."
        ) in asked.plain
        assert (await console.api.get(f"/api/v1/endpoints/{down['id']}")).body["status"] == (
            "parked"
        )
        assert (await client.post(path, {"from_position": ""})).status == 403
        receiver.answer_always("/down", 204)

        done = await client.post(path, {"csrf": asked.csrf, "from_position": ""})

        assert done.status == 303
        assert done.location == f"/console/endpoints/{down['id']}?done=replayed"
        await eventually(lambda: len(receiver.accepted("/down")) >= 2, what="both delivered")
        assert [r.id for r in receiver.accepted("/down")] == [first["id"], second["id"]]
        shown = await client.get(done.location)
        assert "The endpoint was replayed: it is active again" in shown.plain
        assert "failed: HTTP 503 parked (3 in a row)" in shown.plain  # the log keeps it
        [record] = (await console.api.get("/api/v1/audit?action=endpoint.replay")).body["records"]
        assert record["actor"] == "default" and record["detail"]["endpoint_id"] == down["id"]

        # From a position: what is sent a second time is said, then sent.
        again = await client.get(path + f"?from_position={first['position']}")
        assert (
            f"It sends timeline events again from position {first['position']} on, in order: "
            f"those from {first['position']} to {second['position']} it had accepted before"
        ) in again.plain
        await client.post(path, {"csrf": asked.csrf, "from_position": str(first["position"])})
        await eventually(lambda: len(receiver.accepted("/down")) >= 4, what="both again")
        assert [r.id for r in receiver.accepted("/down")][2:] == [first["id"], second["id"]]


async def test_a_refused_replay_is_a_sentence(start: Start, receiver: Receiver) -> None:
    async with start() as console:
        down, _, second = await a_parked_endpoint(console, receiver)
        client = await console.signed_in()
        path = f"/console/endpoints/{down['id']}/replay"

        wrong = await client.get(path + "?from_position=soon")
        assert wrong.status == 422
        assert "A timeline position is a whole number, or left blank; 'soon' is not one." in (
            wrong.plain
        )
        assert "Replay</button>" not in wrong.text
        beyond = second["position"] + 10
        refused = await client.post(path, {"csrf": wrong.csrf, "from_position": str(beyond)})

        assert refused.status == 422
        assert f"{beyond} is beyond the stream's head ({second['position']})" in refused.plain
        assert (await console.api.get(f"/api/v1/endpoints/{down['id']}")).body["status"] == (
            "parked"
        )
        missing = await client.get("/console/endpoints/" + "0" * 32)
        assert missing.status == 404 and "No endpoint with id" in missing.plain
        empty = await console.browser().get("/console/endpoints")
        assert empty.status == 303  # no session: to the sign-in form


async def test_in_chromium_an_operator_reads_tasks_and_replays_a_parked_endpoint(
    start: Start, receiver: Receiver, open_page: OpenPage, tmp_path: Path
) -> None:
    async with start() as console:
        task = await make_task(console.api, "Printer jams on floor 2", assignee="echo",
                               external={"source": "tracker", "key": "INC-7"})  # fmt: skip
        await make_task(console.api, "Book room 4B")
        await console.api.call("PATCH", f"/api/v1/tasks/{task['id']}",
                               json={"author": BO, "status": "in_progress"})  # fmt: skip
        await console.api.post(f"/api/v1/tasks/{task['id']}/comments",
                               {"author": ANN, "text": "Tray 3 again."})  # fmt: skip
        await watch(console.api, await conversation_run(console.api, ANN), task)
        await register(console, receiver.url("/fine"), kinds=["task"])
        _, first, second = await a_parked_endpoint(console, receiver)
        page = await open_page(
            console.url + "/console/login", viewport={"width": 1100, "height": 800}
        )
        await page.get_by_label("Operator token").fill(TOKEN)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("button", name="Sign out")).to_be_visible()

        # Tasks, then one task with its events and the conversation watching it.
        await page.goto(console.url + "/console/tasks")
        await expect(page.get_by_role("heading", name="Every task")).to_be_visible()
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-tasks.png")
        await page.get_by_role("link", name="Printer jams on floor 2").click()
        await expect(page.get_by_role("heading", name="Subscribed conversations")).to_be_visible()
        await expect(page.get_by_text("Tray 3 again.")).to_be_visible()
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-task.png")

        # Endpoints, the parked one, and its replay.
        await page.goto(console.url + "/console/endpoints")
        await expect(page.get_by_text("1 active, 1 parked, 0 disabled.")).to_be_visible()
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-endpoints.png")
        await page.get_by_role("link", name=receiver.url("/down")).click()
        await expect(page.locator("#parked-by")).to_contain_text("got HTTP 503")
        save_screenshot(await page.screenshot(full_page=True), tmp_path, "console-endpoint.png")
        receiver.answer_always("/down", 204)
        await page.get_by_label("From timeline position").fill(str(first["position"]))
        await page.get_by_role("button", name="Replay…").click()
        await expect(page.get_by_role("heading", name="Replay this endpoint?")).to_be_visible()
        await page.get_by_role("button", name="Replay", exact=True).click()
        await expect(page.get_by_role("status")).to_contain_text("The endpoint was replayed")
        await eventually(lambda: len(receiver.accepted("/down")) >= 2, what="both delivered")
        await page.reload()
        await expect(page.locator("dd.status-active")).to_have_text("active")
        assert [r.id for r in receiver.accepted("/down")] == [first["id"], second["id"]]
