"""Runs, their turns (transcripts) and control over HTTP.

GET  /api/v1/runs?thread=ID                  the runs of a thread
GET  /api/v1/runs?role=NAME[&status=S&after=ID&limit=N]  the runs of a role, oldest first
GET  /api/v1/runs/{id}                       one run: cursor, status, session, awake, running
GET  /api/v1/runs/{id}/turns[?after=N&limit=N]  its finished turns, oldest first
POST /api/v1/runs/{id}/cancel                stop the running turn at once (409 when none runs)
POST /api/v1/runs/{id}/sessions              start fresh: open a new session (201)
POST /api/v1/runs/{id}/retry                 take a failed run's last turn again
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp import web

from channels.edge.requests import (
    DATABASE_KEY,
    HOST_KEY,
    created,
    query_id,
    query_int,
    read_object,
    read_query,
)
from core.model.errors import Conflict, InvalidInput
from core.model.runs.run import Run, RunId, RunStatus, Turn
from core.model.timeline import ThreadId, rfc3339
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.audit import audited, note

routes = web.RouteTableDef()


def run_json(run: Run, request: web.Request) -> dict[str, Any]:
    host = request.app[HOST_KEY]
    return {
        "id": run.id,
        "kind": run.kind.value,
        "role": run.role,
        "thread_id": run.thread_id,
        "task_id": run.task_id,
        "cursor": run.cursor,
        "task_cursor": run.task_cursor,
        "status": run.status.value,
        "failures": run.failures,
        "last_error": run.last_error,
        "turns": run.turns,
        "session": {
            "id": run.session.id,
            "number": run.session.number,
            "opened_at": rfc3339(run.session.opened_at),
            "opened": run.session.opened,
            "awake": host.is_awake(run.id),
        },
        "running": host.is_running(run.id),
        "created_at": rfc3339(run.created_at),
        "updated_at": rfc3339(run.updated_at),
    }


def turn_json(turn: Turn) -> dict[str, Any]:
    return {
        "id": turn.id,
        "run_id": turn.run_id,
        "number": turn.number,
        "session_id": turn.session_id,
        "cause": turn.cause.value,
        "outcome": turn.outcome.value,
        "cursor_from": turn.cursor_from,
        "cursor_to": turn.cursor_to,
        "queued_at": rfc3339(turn.queued_at),
        "started_at": rfc3339(turn.started_at),
        "finished_at": rfc3339(turn.finished_at),
        "queue_wait_ms": _ms(turn.started_at - turn.queued_at),
        "duration_ms": _ms(turn.finished_at - turn.started_at),
        "prompt": turn.prompt,
        "steps": list(turn.steps),
        "replies": list(turn.replies),
        "attempts": [
            {
                "started_at": rfc3339(a.started_at),
                "finished_at": rfc3339(a.finished_at),
                "error": a.error,
            }
            for a in turn.attempts
        ],
        "error": turn.error,
        "trace_id": turn.trace_id,
    }


def _ms(delta: timedelta) -> float:
    return round(max(delta.total_seconds(), 0) * 1000, 3)


def _status(raw: str | None) -> RunStatus | None:
    if raw is None:
        return None
    try:
        return RunStatus(raw)
    except ValueError:
        statuses = ", ".join(repr(s.value) for s in RunStatus)
        raise InvalidInput(
            f"'status' is one of {statuses}, not {raw!r}", code="invalid_parameter"
        ) from None


def _run_id(request: web.Request) -> RunId:
    return RunId(request.match_info["id"])


@routes.get("/api/v1/runs")
async def list_runs(request: web.Request) -> web.Response:
    params = read_query(request, ["thread", "task", "role", "status", "after", "limit"])
    runs = request.app[DATABASE_KEY].runs
    if sum(name in params for name in ("thread", "task", "role")) != 1:
        raise InvalidInput(
            "give exactly one of the query parameters 'thread' (a thread id), 'task' (a task "
            "id) or 'role' (a name)",
            code="missing_parameter",
        )
    if "thread" in params or "task" in params:
        if "after" in params or "limit" in params or "status" in params:
            raise InvalidInput(
                "'after', 'limit' and 'status' page and filter the runs of a role; a thread "
                "or a task has one run per role",
                code="conflicting_parameters",
            )
        if "thread" in params:
            found = await runs.of_thread(ThreadId(params["thread"]))
        else:
            found = await runs.of_task(params["task"])
        return web.json_response({"runs": [run_json(r, request) for r in found], "next": None})
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    after = query_id(params, "after", "a run id")
    status = _status(params.get("status"))
    found = await runs.of_role(params["role"], after=after, limit=limit + 1, status=status)
    page = found[:limit]
    return web.json_response(
        {
            "runs": [run_json(r, request) for r in page],
            "next": page[-1].id if len(found) > limit else None,
        }
    )


@routes.get("/api/v1/runs/{id}")
async def show_run(request: web.Request) -> web.Response:
    read_query(request, [])
    run = await request.app[DATABASE_KEY].runs.get(_run_id(request))
    return web.json_response(run_json(run, request))


@routes.get("/api/v1/runs/{id}/turns")
async def list_turns(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit"])
    after = query_int(params, "after", default=0, low=0)
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    runs = request.app[DATABASE_KEY].runs
    found = await runs.turns(_run_id(request), after=after, limit=limit + 1)
    turns = found[:limit]
    return web.json_response(
        {
            "turns": [turn_json(t) for t in turns],
            "next": turns[-1].number if turns else after,
            "more": len(found) > limit,
        }
    )


@routes.post("/api/v1/runs/{id}/cancel")
@audited("run.cancel")
async def cancel_turn(request: web.Request) -> web.Response:
    await read_object(request, required=[], empty_ok=True)
    run_id = _run_id(request)
    database, host = request.app[DATABASE_KEY], request.app[HOST_KEY]
    await database.runs.get(run_id)  # 404 for an unknown run
    if not await host.cancel(run_id):
        raise Conflict("this run has no turn running", code="no_turn_running")
    run = await database.runs.get(run_id)
    note(request, run_id=run_id, role=run.role, thread_id=run.thread_id, task_id=run.task_id)
    return web.json_response({"cancelled": True, "run": run_json(run, request)})


@routes.post("/api/v1/runs/{id}/sessions")
@audited("run.start_fresh")
async def start_fresh(request: web.Request) -> web.Response:
    await read_object(request, required=[], empty_ok=True)
    run = await request.app[HOST_KEY].start_fresh(_run_id(request))
    note(
        request,
        run_id=run.id,
        role=run.role,
        thread_id=run.thread_id,
        before={"session": run.session.number - 1},
        after={"session": run.session.number, "session_id": run.session.id},
    )
    return created(run_json(run, request), f"/api/v1/runs/{run.id}")


@routes.post("/api/v1/runs/{id}/retry")
@audited("run.retry")
async def retry_run(request: web.Request) -> web.Response:
    await read_object(request, required=[], empty_ok=True)
    before = await request.app[DATABASE_KEY].runs.get(_run_id(request))
    run = await request.app[HOST_KEY].retry(before.id)
    note(
        request,
        run_id=run.id,
        role=run.role,
        thread_id=run.thread_id,
        before={"cursor": before.cursor},
        after={"cursor": run.cursor},
    )
    return web.json_response({"retried": True, "run": run_json(run, request)})


@routes.post("/api/v1/runs/{id}/token")
@audited("run.token_minted")
async def mint_token(request: web.Request) -> web.Response:
    """A new bearer token naming the run, for `/api/v1/tools` (debugging, remote agents). It is
    shown once; only its digest is kept, so `Location` is the run it names."""
    await read_object(request, required=[], empty_ok=True)
    run_id = _run_id(request)
    token = await request.app[DATABASE_KEY].runs.mint_token(run_id)
    note(request, run_id=run_id)
    return created({"token": token}, f"/api/v1/runs/{run_id}")
