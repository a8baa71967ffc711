"""The console's tasks: every task with how many conversations watch it, and one task with its
events, the runs working on it and the conversations subscribed to it.

    GET /console/tasks[?status=S&after=ID]                  tasks, oldest first, a page at a time
    GET /console/tasks/{id}[?after=SEQ&watchers_after=RUN]  one task: events, runs, subscribers

**Reading.** The list is `GET /api/v1/tasks` (with `status=` when one is chosen), `PAGE` at a
time, each task with its `subscribers` count. A task's page is the task and a page of its
events (`GET /api/v1/tasks/{id}/events`), the newest `EVENTS` first: the newest page starts
after `seq` `events - EVENTS` (a task's `events` is its newest `seq`), and `after` pages back
from there, as a run's transcript does. The runs on the task (`GET /api/v1/runs?task=…`: its
assignee's) link to their run pages; the subscribed conversations
(`GET /api/v1/tasks/{id}/subscribers`, by run id, `PAGE` at a time) link to the conversation and
to the run that watches it there. Task runs are linked here from the Runs page.

Nothing here changes a task: the operator API changes tasks as a person (`author`), and the
console acts only as its operator.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from core.model.tasks import TaskStatus
from gateway.console.api import api_path
from gateway.console.guard import Visit, page
from gateway.console.render import render

PAGE = 50
EVENTS = 20
STATUSES = tuple(status.value for status in TaskStatus)


def _digits(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isdigit() and len(raw) <= 16 else None


def changed(event: dict[str, Any]) -> list[tuple[str, str]]:
    """What a task event changed, as (field, words) pairs: `from → to` for an update, the value
    for a creation."""
    shown: list[tuple[str, str]] = []
    for name, value in sorted(event["changes"].items()):
        if event["kind"] == "updated" and isinstance(value, dict):
            shown.append((name, f"{_word(value.get('from'))} → {_word(value.get('to'))}"))
        elif name != "body" or value:
            shown.append((name, _word(value)))
    return shown


def _word(value: Any) -> str:
    if value is None or value == "":
        return "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


@page
async def tasks(request: web.Request, visit: Visit) -> web.StreamResponse:
    status = request.query.get("status") if request.query.get("status") in STATUSES else None
    after = request.query.get("after") or None
    query = {"status": status, "after": after, "limit": PAGE}
    found = await visit.api.get(api_path("tasks"), query)
    return render(
        "tasks.html",
        **visit.context("tasks"),
        tasks=found["tasks"],
        next_after=found["next"],
        after=after,
        only=status,
        statuses=STATUSES,
    )


@page
async def task(request: web.Request, visit: Visit) -> web.StreamResponse:
    task_id = request.match_info["id"]
    events_path = api_path("tasks", task_id, "events")
    asked = _digits(request.query.get("after"))
    after = asked or 0
    shown = await visit.api.get(events_path, {"after": after, "limit": EVENTS})
    last = int(shown["task"]["events"])
    if asked is None or asked >= last:  # the newest page
        after = max(last - EVENTS, 0)
        if after != (asked or 0):
            shown = await visit.api.get(events_path, {"after": after, "limit": EVENTS})
    watchers_after = request.query.get("watchers_after") or None
    watchers = await visit.api.get(
        api_path("tasks", task_id, "subscribers"), {"after": watchers_after, "limit": PAGE}
    )
    runs = await visit.api.get(api_path("runs"), {"task": task_id})
    return render(
        "task.html",
        **visit.context("tasks"),
        task=shown["task"],
        events=list(reversed(shown["events"])),
        newer=after + EVENTS if after + EVENTS < last else None,
        older=max(after - EVENTS, 0) if after > 0 else None,
        watchers=watchers["subscribers"],
        watchers_after=watchers_after,
        watchers_next=watchers["next"],
        runs=runs["runs"],
        changed=changed,
    )
