"""Tasks over HTTP, for operators and people.

    POST  /api/v1/tasks                    create: {author, title, body?, assignee?, external?}
    GET   /api/v1/tasks[?status=&assignee=&after=&limit=]   tasks, oldest first, each with
                                           how many conversations watch it
    GET   /api/v1/tasks/{id}               one task with its events
    GET   /api/v1/tasks/{id}/events[?after=SEQ&limit=]       the task and a page of its events
    GET   /api/v1/tasks/{id}/subscribers[?after=RUN&limit=]  the conversations' runs watching it
    PATCH /api/v1/tasks/{id}               change: {author, title?, body?, status?, assignee?}
    POST  /api/v1/tasks/{id}/comments      comment: {author, text}

`author` is the person the change is recorded as made by (`person:<slug>`); runs change tasks
through the agent tools, external sources through webhooks. An assignee must be a role this
gateway serves.
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import (
    DATABASE_KEY,
    ROSTER_KEY,
    created,
    field,
    named,
    query_id,
    query_int,
    read_object,
    read_query,
)
from core.model.errors import InvalidInput
from core.model.participants import Address, ParticipantKind, kind_of, parse_address
from core.model.tasks import (
    Actor,
    TaskChange,
    TaskId,
    check_body,
    check_comment,
    check_title,
    parse_assignee,
    parse_external,
    parse_status,
)
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.audit import audited, note

routes = web.RouteTableDef()

_SHOWN_CHANGES = ("status", "assignee")
"""The changes of a task whose before and after its audit record shows (the others: by name)."""


def _person(raw: object) -> Address:
    address = parse_address(raw)
    if kind_of(address) is not ParticipantKind.PERSON:
        raise InvalidInput("author must be a person (person:<slug>)", code="invalid_author")
    return address


@routes.post("/api/v1/tasks")
@audited("task.create")
async def create_task(request: web.Request) -> web.Response:
    body = await read_object(
        request, required=["author", "title"], optional=["body", "assignee", "external"]
    )
    author = field(body, "author", _person)
    task, event = await request.app[DATABASE_KEY].tasks.create(
        title=field(body, "title", check_title),
        body=field(body, "body", check_body),
        assignee=field(body, "assignee", request.app[ROSTER_KEY].assignee),
        external=field(body, "external", parse_external),
        actor=Actor.person(author),
    )
    note(request, task_id=task.id, author=author, assignee=task.assignee)
    return created({**task.to_json(), "event": event.to_json()}, f"/api/v1/tasks/{task.id}")


@routes.get("/api/v1/tasks")
async def list_tasks(request: web.Request) -> web.Response:
    params = read_query(request, ["status", "assignee", "after", "limit"])
    status = named("status", parse_status, params["status"]) if "status" in params else None
    assignee = (
        named("assignee", parse_assignee, params["assignee"]) if "assignee" in params else None
    )
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    after = query_id(params, "after", "a task id")
    found = await request.app[DATABASE_KEY].tasks.list(
        status=status, assignee=assignee, after=after, limit=limit + 1
    )
    page = found[:limit]
    watched = await request.app[DATABASE_KEY].subscriptions.counts([t.id for t in page])
    return web.json_response(
        {
            "tasks": [{**t.to_json(), "subscribers": watched.get(t.id, 0)} for t in page],
            "next": page[-1].id if len(found) > limit else None,
        }
    )


@routes.get("/api/v1/tasks/{id}")
async def show_task(request: web.Request) -> web.Response:
    read_query(request, [])
    task, events = await request.app[DATABASE_KEY].tasks.get(request.match_info["id"])
    return web.json_response({**task.to_json(), "history": [e.to_json() for e in events]})


@routes.get("/api/v1/tasks/{id}/events")
async def list_task_events(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit"])
    after = query_int(params, "after", default=0, low=0)
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    task, events, more = await request.app[DATABASE_KEY].tasks.events(
        request.match_info["id"], after=after, limit=limit
    )
    return web.json_response(
        {
            "task": task.to_json(),
            "events": [e.to_json() for e in events],
            "next": events[-1].seq if more else None,
        }
    )


@routes.get("/api/v1/tasks/{id}/subscribers")
async def list_task_subscribers(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit"])
    after = query_id(params, "after", "a run id")
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    found, more = await request.app[DATABASE_KEY].subscriptions.subscribers(
        request.match_info["id"], after=after, limit=limit
    )
    return web.json_response(
        {"subscribers": [s.to_json() for s in found], "next": found[-1].run_id if more else None}
    )


@routes.patch("/api/v1/tasks/{id}")
@audited("task.update")
async def update_task(request: web.Request) -> web.Response:
    body = await read_object(
        request, required=["author"], optional=["title", "body", "status", "assignee"]
    )
    author = field(body, "author", _person)
    change = TaskChange(
        title=field(body, "title", check_title) if "title" in body else None,
        body=field(body, "body", check_body) if "body" in body else None,
        status=field(body, "status", parse_status) if "status" in body else None,
        assignee=(field(body, "assignee", request.app[ROSTER_KEY].assignee) or "")
        if "assignee" in body
        else None,
    )
    task, event = await request.app[DATABASE_KEY].tasks.update(
        TaskId(request.match_info["id"]), change, Actor.person(author)
    )
    changes = dict(event.changes) if event is not None else {}
    shown = {name: changes[name] for name in _SHOWN_CHANGES if name in changes}
    note(request, task_id=task.id, author=author, fields=sorted(changes), **shown)
    return web.json_response({**task.to_json(), "event": event.to_json() if event else None})


@routes.post("/api/v1/tasks/{id}/comments")
@audited("task.comment")
async def comment_on_task(request: web.Request) -> web.Response:
    body = await read_object(request, required=["author", "text"])
    author = field(body, "author", _person)
    event = await request.app[DATABASE_KEY].tasks.comment(
        TaskId(request.match_info["id"]), field(body, "text", check_comment), Actor.person(author)
    )
    note(request, task_id=event.task_id, author=author, event_id=event.id)
    return created(event.to_json(), f"/api/v1/tasks/{event.task_id}")  # its history holds it
