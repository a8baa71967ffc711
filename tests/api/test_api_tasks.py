"""Tasks over HTTP: create, read with their history, list, change, comment — every change a task
event saying who made it and what changed; status moves by the rules; clear errors."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Api
from tests.waiting import eventually

ANN = "person:ann"


async def _create(api: Api, **fields: object) -> dict[str, Any]:
    reply = await api.post("/api/v1/tasks", {"author": ANN, "title": "Book a room", **fields})
    assert reply.status == 201, reply.text
    task: dict[str, Any] = reply.body
    return task


async def test_a_task_is_created_open_with_a_created_event(gateway: Api) -> None:
    task = await _create(gateway, body="Friday 10:00", assignee="role:echo",
                         external={"source": "github", "key": "acme/app#1"})  # fmt: skip
    assert task["status"] == "open" and task["assignee"] == "echo" and task["events"] == 1
    assert task["external"] == {"source": "github", "key": "acme/app#1"}
    assert task["event"]["kind"] == "created"
    assert task["event"]["actor"] == {"kind": "person", "name": ANN}
    assert task["event"]["changes"]["title"] == "Book a room"
    shown = (await gateway.get(f"/api/v1/tasks/{task['id']}")).body
    assert [e["kind"] for e in shown["history"]] == ["created"]


async def test_changes_and_comments_are_task_events_in_order(gateway: Api) -> None:
    task = await _create(gateway)
    moved = await gateway.call("PATCH", f"/api/v1/tasks/{task['id']}",
                               json={"author": "person:bob", "status": "in_progress",
                                     "title": "Book room 4B"})  # fmt: skip
    assert moved.status == 200, moved.text
    assert moved.body["status"] == "in_progress" and moved.body["title"] == "Book room 4B"
    assert moved.body["event"]["changes"] == {
        "title": {"from": "Book a room", "to": "Book room 4B"},
        "status": {"from": "open", "to": "in_progress"},
    }
    same = await gateway.call("PATCH", f"/api/v1/tasks/{task['id']}",
                              json={"author": ANN, "title": "Book room 4B"})  # fmt: skip
    assert same.status == 200 and same.body["event"] is None  # nothing changed, nothing recorded
    comment = await gateway.post(f"/api/v1/tasks/{task['id']}/comments",
                                 {"author": ANN, "text": "Done by noon?"})  # fmt: skip
    assert comment.status == 201 and comment.body["text"] == "Done by noon?"

    history = (await gateway.get(f"/api/v1/tasks/{task['id']}")).body["history"]
    assert [(e["seq"], e["kind"], e["actor"]["name"]) for e in history] == [
        (1, "created", ANN),
        (2, "updated", "person:bob"),
        (3, "commented", ANN),
    ]
    assert history[0]["position"] < history[1]["position"] < history[2]["position"]


async def test_status_moves_follow_the_rules(gateway: Api) -> None:
    task = await _create(gateway)
    path = f"/api/v1/tasks/{task['id']}"
    done = await gateway.call("PATCH", path, json={"author": ANN, "status": "done"})
    assert done.body["status"] == "done"
    (await gateway.call("PATCH", path, json={"author": ANN, "status": "done"})).error(
        409, "already_in_status"
    )
    (await gateway.call("PATCH", path, json={"author": ANN, "status": "in_progress"})).error(
        409, "illegal_status_change"
    )
    reopened = await gateway.call("PATCH", path, json={"author": ANN, "status": "open"})
    assert reopened.body["status"] == "open"


async def test_tasks_are_listed_by_status_and_assignee_in_pages(gateway: Api) -> None:
    first = await _create(gateway, assignee="echo")
    await _create(gateway)
    await _create(gateway, assignee="echo")
    done = {"author": ANN, "status": "done"}
    await gateway.call("PATCH", f"/api/v1/tasks/{first['id']}", json=done)

    def titles_of(body: dict[str, Any]) -> list[str]:
        return [t["id"] for t in body["tasks"]]

    assigned = (await gateway.get("/api/v1/tasks?assignee=echo")).body
    assert len(assigned["tasks"]) == 2 and assigned["next"] is None
    open_assigned = (await gateway.get("/api/v1/tasks?assignee=role:echo&status=open")).body
    assert len(open_assigned["tasks"]) == 1
    page = (await gateway.get("/api/v1/tasks?limit=2")).body
    rest = (await gateway.get(f"/api/v1/tasks?after={page['next']}")).body
    assert len(titles_of(page)) == 2 and len(titles_of(rest)) == 1


async def test_bad_task_requests_get_clear_errors(gateway: Api) -> None:
    (await gateway.post("/api/v1/tasks", {"author": ANN})).error(422, "missing_field")
    (await gateway.post("/api/v1/tasks", {"author": "role:echo", "title": "x"})).error(
        422, "invalid_author"
    )
    (await gateway.post("/api/v1/tasks", {"author": ANN, "title": " "})).error(422, "invalid_title")
    external = {"source": "github", "key": "acme/app#2"}
    await _create(gateway, external=external)
    (
        await gateway.post("/api/v1/tasks", {"author": ANN, "title": "y", "external": external})
    ).error(409, "external_taken")
    (await gateway.get("/api/v1/tasks/nope")).error(404, "task_not_found")
    (await gateway.get("/api/v1/tasks?status=later")).error(422, "invalid_status")
    (await gateway.post("/api/v1/tasks/nope/comments", {"author": ANN, "text": "hi"})).error(
        404, "task_not_found"
    )


async def test_a_task_assigned_to_a_role_gets_its_task_run(gateway: Api) -> None:
    task = await _create(gateway, assignee="echo")

    async def task_runs() -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = (await gateway.get(f"/api/v1/runs?task={task['id']}")).body[
            "runs"
        ]
        return runs

    [run] = await eventually(task_runs, what="the task's run")
    assert run["kind"] == "task" and run["task_id"] == task["id"] and run["thread_id"] is None
    assert run["role"] == "echo"
    (await gateway.get("/api/v1/runs?task=nope")).error(404, "task_not_found")
    (await gateway.get(f"/api/v1/runs?task={task['id']}&role=echo")).error(422, "missing_parameter")


async def _conversation_run(api: Api, person: str) -> dict[str, Any]:
    """The echo role's run in its conversation with `person`, once it exists."""
    thread = await api.thread(person, "role:echo")
    await api.say(thread["id"], person, "hello")

    async def found() -> dict[str, Any] | None:
        runs = (await api.get(f"/api/v1/runs?thread={thread['id']}")).body["runs"]
        return runs[0] if runs else None

    return await eventually(found, what=f"the run of {person}'s conversation")


async def test_a_tasks_events_are_read_a_page_at_a_time(gateway: Api) -> None:
    task = await _create(gateway)
    for n in range(4):
        reply = await gateway.post(f"/api/v1/tasks/{task['id']}/comments",
                                   {"author": ANN, "text": f"note {n}"})  # fmt: skip
        assert reply.status == 201, reply.text

    first = (await gateway.get(f"/api/v1/tasks/{task['id']}/events?limit=2")).body
    assert [e["seq"] for e in first["events"]] == [1, 2] and first["next"] == 2
    rest = (await gateway.get(f"/api/v1/tasks/{task['id']}/events?after=2&limit=3")).body
    assert [(e["seq"], e["text"]) for e in rest["events"]] == [(3, "note 1"), (4, "note 2"),
                                                               (5, "note 3")]  # fmt: skip
    assert rest["next"] is None
    assert first["task"]["id"] == task["id"] and first["task"]["events"] == 5
    assert "history" not in first["task"]
    past = (await gateway.get(f"/api/v1/tasks/{task['id']}/events?after=5")).body
    assert (past["events"], past["next"]) == ([], None)
    missing = await gateway.get("/api/v1/tasks/" + "0" * 32 + "/events")
    missing.error(404, "task_not_found")
    (await gateway.get(f"/api/v1/tasks/{task['id']}/events?after=x")).error(
        422, "invalid_parameter"
    )


async def test_a_tasks_subscribers_are_listed_and_counted(gateway: Api) -> None:
    watched, alone = await _create(gateway), await _create(gateway, title="Nobody cares")
    runs = [await _conversation_run(gateway, person) for person in ("person:ann", "person:bo")]
    for run in runs:
        reply = await gateway.post(f"/api/v1/runs/{run['id']}/subscriptions",
                                   {"task_id": watched["id"]})  # fmt: skip
        assert reply.status == 201, reply.text

    listed = (await gateway.get("/api/v1/tasks")).body["tasks"]
    assert {t["id"]: t["subscribers"] for t in listed} == {watched["id"]: 2, alone["id"]: 0}
    page = (await gateway.get(f"/api/v1/tasks/{watched['id']}/subscribers?limit=1")).body
    ordered = sorted(runs, key=lambda r: r["id"])
    [first] = page["subscribers"]
    assert first["run_id"] == ordered[0]["id"] and page["next"] == ordered[0]["id"]
    assert (first["thread_id"], first["role"]) == (ordered[0]["thread_id"], "echo")
    assert first["since"] >= watched["event"]["position"]
    rest = await gateway.get(f"/api/v1/tasks/{watched['id']}/subscribers?after={page['next']}")
    assert [s["run_id"] for s in rest.body["subscribers"]] == [ordered[1]["id"]]
    assert rest.body["next"] is None
    nobody = (await gateway.get(f"/api/v1/tasks/{alone['id']}/subscribers")).body
    assert nobody == {"subscribers": [], "next": None}
    missing = await gateway.get("/api/v1/tasks/" + "0" * 32 + "/subscribers")
    missing.error(404, "task_not_found")
