"""The agent's tools over plain HTTP, behind run tokens.

    GET  /api/v1/tools           the tools, with their JSON schemas
    POST /api/v1/tools/{name}    call one: JSON arguments in, `{"result": …}` out

These routes take `Authorization: Bearer <run token>` — not the operator token. The token names
one run; on every call the run is looked up and checked now
(`core.model.runs.tokens.check_may_act`):
a missing, unknown or malformed token is 401; a run whose conversation no longer lets it act
(its person or its role removed, its role no longer served) is 403. Unknown tool 404; bad
arguments 422 naming the argument. Operators mint tokens with `POST /api/v1/runs/{id}/token`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from channels.edge.errors import ApiError
from channels.edge.requests import (
    DATABASE_KEY,
    HOST_KEY,
    ROLES_KEY,
    ROSTER_KEY,
    read_object,
    read_query,
)
from core.engine.approvals import HoldTurn, never, no_hold
from core.engine.tools import TOOLS, RunTools, call_tool
from core.model.errors import NotAllowed
from core.model.runs.run import Run, RunKind
from core.model.runs.tokens import check_may_act

routes = web.RouteTableDef()

WAITING_KEY: web.AppKey[set[asyncio.Task[Any]]] = web.AppKey("waiting_for_people")
"""Tool calls waiting for a person's answer (`ask`), cut short when the gateway stops."""

TOOLS_PREFIX = "/api/v1/tools"


def _unauthorized(message: str) -> ApiError:
    return ApiError(
        401, "invalid_run_token", message, headers={"WWW-Authenticate": 'Bearer realm="rolecall"'}
    )


async def calling_run(request: web.Request) -> Run:
    """The run the request's bearer token names, if it may act right now."""
    return await run_for_bearer(request.app, request.headers.get("Authorization", ""))


async def run_for_bearer(app: web.Application, authorization: str) -> Run:
    """The run an `Authorization: Bearer <run token>` header names, checked now: both tool
    surfaces (this one and MCP at `/mcp`) resolve their caller here."""
    run = await run_of_token(app, authorization)
    database = app[DATABASE_KEY]
    assert run.thread_id is not None
    thread = await database.threads.get(run.thread_id)
    deactivated = await database.people.inactive(thread.addresses)
    check_may_act(
        run, thread.states, role_configured=run.role in app[ROLES_KEY], deactivated=deactivated
    )
    return run


def tools_of(app: web.Application, run: Run) -> RunTools:
    """The tools of `run` for one call, counted against its running turn's tool budget (when a
    turn of it runs in this gateway)."""
    host = app.get(HOST_KEY)
    budget = host.tool_budget(run.id) if host is not None else None
    return RunTools(
        app[DATABASE_KEY],
        run,
        read_to=run.cursor,
        roster=app[ROSTER_KEY],
        budget=budget,
        hold=_cut_short_on_stop(app, host.hold_turn(run.id) if host is not None else no_hold),
        stopping=host.is_stopping if host is not None else never,
    )


def _cut_short_on_stop(app: web.Application, hold: HoldTurn) -> HoldTurn:
    """`hold`, with the calling task known as waiting for a person while it holds."""

    @contextlib.asynccontextmanager
    async def held(longest: float) -> AsyncIterator[None]:
        task = asyncio.current_task()
        waiting = app[WAITING_KEY]
        if task is not None:
            waiting.add(task)
        try:
            async with hold(longest):
                yield
        finally:
            if task is not None:
                waiting.discard(task)

    return held


async def cut_waits_short(app: web.Application) -> None:
    """The gateway is stopping (`on_shutdown`, before the server waits for its open requests):
    the calls waiting for a person end now, their questions left open for the turns' reruns
    (the run host is told it stops first, so the waits do not cancel them)."""
    host = app.get(HOST_KEY)
    if host is not None:
        host.mark_stopping()
    waiting: set[asyncio.Task[Any]] = app[WAITING_KEY]
    for task in tuple(waiting):
        task.cancel()


async def run_of_token(app: web.Application, authorization: str) -> Run:
    """The conversation run a bearer token names (401 when it names none), not yet checked for
    what it may do now."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("this route needs the header 'Authorization: Bearer <run token>'")
    database = app[DATABASE_KEY]
    run = await database.runs.by_token(token.strip())
    if run is None:
        raise _unauthorized("this run token names no run")
    if run.kind is not RunKind.CONVERSATION or run.thread_id is None:
        raise NotAllowed("only conversation runs have these tools yet", code="not_a_conversation")
    return run


@routes.get(TOOLS_PREFIX)
async def list_tools(request: web.Request) -> web.Response:
    read_query(request, [])
    await calling_run(request)
    return web.json_response(
        {
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in TOOLS.values()
            ]
        }
    )


@routes.post(TOOLS_PREFIX + "/{name}")
async def call(request: web.Request) -> web.Response:
    run = await calling_run(request)
    read_query(request, [])
    name = request.match_info["name"]
    tool = TOOLS.get(name)
    if tool is None:
        arguments: object = {}  # call_tool names the tools there are
    else:
        arguments = await read_object(
            request, required=tool.required, optional=tool.arguments, empty_ok=True
        )
    tools = tools_of(request.app, run)
    return web.json_response({"result": await call_tool(tools, name, arguments)})
