"""What a conversation's run watches, for operators.

    GET  /api/v1/runs/{id}/subscriptions   {"tasks": [task, …], "awaiting": ["github:o/r#1", …]}
    POST /api/v1/runs/{id}/subscriptions   {task_id} or {external_key}: watch it, as the run's
                                           own `subscribe` tool would (201 new, 200 already)

`awaiting` are the external items the run subscribed to by key that no task refers to yet: the
first event about one creates its task and wakes the run. Only conversation runs watch tasks
(403 `not_a_conversation` for a task run).
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, ROSTER_KEY, created, read_object, read_query
from core.engine.tools import RunTools
from core.model.errors import NotAllowed
from core.model.runs.run import Run, RunId, RunKind
from gateway.api.audit import audited, note

routes = web.RouteTableDef()


async def _conversation_run(request: web.Request) -> Run:
    run = await request.app[DATABASE_KEY].runs.get(RunId(request.match_info["id"]))
    if run.kind is not RunKind.CONVERSATION:
        raise NotAllowed(
            "only a conversation's run watches tasks; this one works on a task",
            code="not_a_conversation",
        )
    return run


@routes.get("/api/v1/runs/{id}/subscriptions")
async def list_subscriptions(request: web.Request) -> web.Response:
    read_query(request, [])
    run = await _conversation_run(request)
    tasks, awaiting = await request.app[DATABASE_KEY].subscriptions.of_run_with_waits(run.id)
    return web.json_response(
        {"tasks": [t.to_json() for t in tasks], "awaiting": [ref.text for ref in awaiting]}
    )


@routes.post("/api/v1/runs/{id}/subscriptions")
@audited("run.subscribe")
async def subscribe(request: web.Request) -> web.Response:
    body = await read_object(request, optional=["task_id", "external_key"])
    run = await _conversation_run(request)
    tools = RunTools(
        request.app[DATABASE_KEY], run, read_to=run.cursor, roster=request.app[ROSTER_KEY]
    )
    result = await tools.subscribe(body.get("task_id"), external_key=body.get("external_key"))
    note(
        request,
        run_id=run.id,
        task_id=result.get("task_id"),
        external_key=result.get("external_key"),
        new=bool(result["new"]),
    )
    if result["new"]:
        return created(result, f"/api/v1/runs/{run.id}/subscriptions")
    return web.json_response(result)
