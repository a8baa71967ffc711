"""The console's tasks over real HTTP (`gateway.console.tasks`): every task with its status, last
change and how many conversations watch it, filtered and paged; a task's page with its events
newest first (what each changed, who made it), paged, the run working on it, and the
conversations subscribed to it, each linking to its conversation and to the run that watches.
"""

from __future__ import annotations

import re
from typing import Any

from tests.api.conftest import Api
from tests.console.conftest import Console
from tests.waiting import eventually

ANN = "person:ann"


async def make_task(api: Api, title: str, **fields: Any) -> dict[str, Any]:
    reply = await api.post("/api/v1/tasks", {"author": ANN, "title": title, **fields})
    assert reply.status == 201, reply.text
    task: dict[str, Any] = reply.body
    return task


async def conversation_run(api: Api, person: str) -> dict[str, Any]:
    """The echo role's run in its conversation with `person`, once it has answered."""
    thread = await api.thread(person, "role:echo")
    await api.say(thread["id"], person, "hello")

    async def found() -> dict[str, Any] | None:
        runs = (await api.get(f"/api/v1/runs?thread={thread['id']}")).body["runs"]
        return runs[0] if runs and runs[0]["turns"] >= 1 else None

    return await eventually(found, what=f"the run of {person}'s conversation")


async def watch(api: Api, run: dict[str, Any], task: dict[str, Any]) -> None:
    reply = await api.post(f"/api/v1/runs/{run['id']}/subscriptions", {"task_id": task["id"]})
    assert reply.status == 201, reply.text


async def test_tasks_are_listed_with_their_status_and_watchers(console: Console) -> None:
    printer = await make_task(console.api, "Printer jams", assignee="echo")
    room = await make_task(console.api, "Book room 4B")
    await console.api.call("PATCH", f"/api/v1/tasks/{room['id']}",
                           json={"author": ANN, "status": "done"})  # fmt: skip
    for person in ("person:ann", "person:bo"):
        await watch(console.api, await conversation_run(console.api, person), printer)
    client = await console.signed_in()

    page = await client.get("/console/tasks")

    assert page.status == 200
    rows = _rows(page.plain)
    assert "Printer jams open role:echo" in rows[0] and "2 conversations" in rows[0]
    assert "Book room 4B done nobody" in rows[1] and "0 conversations" in rows[1]
    assert f'href="/console/tasks/{printer["id"]}"' in page.text
    done = await client.get("/console/tasks?status=done")
    assert "Book room 4B" in done.plain and "Printer jams" not in done.plain
    assert '<option value="done" selected>' in done.text
    cancelled = await client.get("/console/tasks?status=cancelled")
    assert "No cancelled tasks." in cancelled.plain


def _rows(plain: str) -> list[str]:
    """The table's rows, as text, after its header."""
    body = plain.split("Watched by", 1)[1]
    return [row for row in re.split(r"(?= (?:Printer jams|Book room 4B) )", body) if row.strip()]


async def test_the_task_list_is_paged(console: Console) -> None:
    made = [await make_task(console.api, f"Task {n:02}") for n in range(51)]
    client = await console.signed_in()

    first = await client.get("/console/tasks")

    assert "Task 49" in first.plain and "Task 50" not in first.plain
    link = f'href="/console/tasks?after={made[49]["id"]}"'
    assert link in first.text
    second = await client.get(f"/console/tasks?after={made[49]['id']}")
    assert "Task 50" in second.plain and "Task 49" not in second.plain
    assert "First page" in second.plain and "Next tasks" not in second.plain


async def test_a_tasks_page_shows_its_events_its_run_and_its_watchers(console: Console) -> None:
    task = await make_task(console.api, "Printer jams", body="Floor 2", assignee="echo")
    change = {"author": "person:bo", "status": "in_progress"}
    moved = await console.api.call("PATCH", f"/api/v1/tasks/{task['id']}", json=change)
    assert moved.status == 200, moved.text
    await console.api.post(f"/api/v1/tasks/{task['id']}/comments",
                           {"author": ANN, "text": "Paper tray 3."})  # fmt: skip
    run = await conversation_run(console.api, "person:ann")
    await watch(console.api, run, task)

    async def task_run() -> dict[str, Any] | None:
        runs = (await console.api.get(f"/api/v1/runs?task={task['id']}")).body["runs"]
        return runs[0] if runs else None

    worker = await eventually(task_run, what="the echo role's run on the task")
    client = await console.signed_in()

    page = await client.get(f"/console/tasks/{task['id']}")

    assert page.status == 200
    said = page.plain
    assert "Printer jams" in said and "Status in progress" in said and "Floor 2" in said
    # Newest first: the comment, the update (what it changed, by whom), the creation.
    assert re.findall(r'id="event-(\d+)"', page.text)[:3] == ["3", "2", "1"]
    assert "updated by person:bo status: open → in_progress" in said
    assert "commented by person:ann" in said and "Paper tray 3." in said
    assert "title: Printer jams" in said  # what the creation set
    assert f'href="/console/runs/{worker["id"]}"' in page.text
    assert f'href="/console/conversations/{run["thread_id"]}"' in page.text
    assert f'href="/console/runs/{run["id"]}"' in page.text
    # The Runs page links the task run here.
    runs = await client.get("/console/runs?role=echo")
    assert f'href="/console/tasks/{task["id"]}"' in runs.text


async def test_a_tasks_events_are_paged_newest_first(console: Console) -> None:
    task = await make_task(console.api, "Long one")
    for n in range(24):
        await console.api.post(f"/api/v1/tasks/{task['id']}/comments",
                               {"author": ANN, "text": f"note {n}"})  # fmt: skip
    client = await console.signed_in()

    newest = await client.get(f"/console/tasks/{task['id']}")

    seqs = [int(n) for n in re.findall(r'id="event-(\d+)"', newest.text)]
    assert seqs == list(range(25, 5, -1))
    assert f'href="/console/tasks/{task["id"]}?after=0"' in newest.text
    older = await client.get(f"/console/tasks/{task['id']}?after=0")
    assert [int(n) for n in re.findall(r'id="event-(\d+)"', older.text)] == list(range(20, 0, -1))
    assert "Newer events" in older.plain and "Older events" not in older.plain
    assert "No conversation watches this task." in newest.plain
    assert "No run works on this task: it is assigned to nobody." in newest.plain


async def test_an_unknown_task_is_a_sentence(console: Console) -> None:
    client = await console.signed_in()
    page = await client.get("/console/tasks/nope")
    assert page.status == 404 and "No task with id 'nope'." in page.plain
    signed_out = await console.browser().get("/console/tasks")
    assert signed_out.status == 303 and signed_out.location.startswith("/console/login")
