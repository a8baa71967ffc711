"""The console's runs: a role's runs, and one run with its transcript and controls.

    GET  /console/runs[?role=NAME&status=S&after=ID]  a role's runs, paged
    GET  /console/runs/{id}[?after=N]                 one run: its state, session and turns
    POST /console/runs/{id}/cancel                    stop its running turn
    GET  /console/runs/{id}/fresh                     what starting fresh does (a confirmation)
    POST /console/runs/{id}/fresh                     start fresh
    POST /console/runs/{id}/retry                     take its failed last turn again
    POST /console/runs/{id}/token                     mint a run token, shown once

**Reading.** Runs are listed by role (`GET /api/v1/runs?role=…`, with `status=` when one is
chosen), the first role served when none is asked for, a page at a time. A run's page shows the
run (`GET /api/v1/runs/{id}`) and its transcript (`GET /api/v1/runs/{id}/turns`), the newest
turns first, `TURNS` at a time: the newest page starts after turn `turns - TURNS`, and `after`
pages back from there. Each turn shows its cause and outcome, its timings, what it was told (the
prompt's news and task digest), every step (`transcript_step` names each kind of
`core.engine.host.transcript`), its attempts with their errors, and its trace id.

**Controls.** Each is a form carrying the session's CSRF token that asks the operator API
(audited as the session's operator) and then sends the browser back to the run's page with a
notice (POST, redirect, GET). A refusal (409 `no_turn_running`, `not_failed`…) is the run's page
again with the API's sentence, answered with the API's status. Starting fresh goes through a page
that says what it does first. A minted token is shown once, on the answer to the post itself
(never in a URL, `no-store` as every console page), and kept nowhere.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.console.api import ApiRefused, api_path
from gateway.console.guard import Visit, as_sentence, page
from gateway.console.render import render

PAGE = 50
TURNS = 10
STATUSES = ("ready", "failed")
DONE = {
    "cancelled": "The running turn was stopped; it ended as cancelled.",
    "fresh": "The run started fresh: its next turn opens a new session.",
    "retried": "The run takes its failed turn again: its cursor was set back to where that turn "
    "began.",
}
STEP_LABELS = {
    "reply": "Reply",
    "tool_call": "Tool call",
    "limit": "Tool budget",
    "mended": "Mended",
    "attempt": "Attempt ended",
    "error": "Not stored",
}
"""How the transcript names each kind of step; any other kind (thought, plan, status…) is the
agent's own and shown as it is."""


def _digits(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isdigit() and len(raw) <= 16 else None


def state_of(run: dict[str, Any]) -> str:
    """What a run is doing now, in a word, as this replica's run host knows it."""
    if run["running"]:
        return "running"
    if run["session"]["awake"]:
        return "awake"
    return "asleep" if run["session"]["opened"] else "not opened"


def step_label(kind: str) -> str:
    return STEP_LABELS.get(kind, kind.replace("_", " ").capitalize())


def _back(run_id: str, done: str) -> web.Response:
    return web.Response(status=303, headers={"Location": f"/console/runs/{run_id}?done={done}"})


@page
async def runs(request: web.Request, visit: Visit) -> web.StreamResponse:
    roles: list[dict[str, Any]] = (await visit.api.get(api_path("roles")))["roles"]
    role = request.query.get("role") or (roles[0]["name"] if roles else None)
    status = request.query.get("status") if request.query.get("status") in STATUSES else None
    after = request.query.get("after") or None
    found: dict[str, Any] = {"runs": [], "next": None}
    if role is not None:
        query = {"role": role, "status": status, "after": after, "limit": PAGE}
        found = await visit.api.get(api_path("runs"), query)
    return render(
        "runs.html",
        **visit.context("runs"),
        roles=roles,
        role=role,
        only=status,
        statuses=STATUSES,
        after=after,
        runs=found["runs"],
        next_after=found["next"],
        state_of=state_of,
    )


@page
async def run(request: web.Request, visit: Visit) -> web.StreamResponse:
    notice = DONE.get(request.query.get("done", ""))
    return await _run_page(request, visit, notice=notice)


async def _run_page(
    request: web.Request,
    visit: Visit,
    *,
    notice: str | None = None,
    refused: ApiRefused | None = None,
) -> web.Response:
    run_id = request.match_info["id"]
    shown = await visit.api.get(api_path("runs", run_id))
    last = int(shown["turns"])
    after = _digits(request.query.get("after"))
    if after is None or after >= last:
        after = max(last - TURNS, 0)
    turns = await visit.api.get(api_path("runs", run_id, "turns"), {"after": after, "limit": TURNS})
    return render(
        "run.html",
        status=refused.status if refused else 200,
        **visit.context("runs"),
        run=shown,
        state=state_of(shown),
        turns=list(reversed(turns["turns"])),
        newer=after + TURNS if after + TURNS < last else None,
        older=max(after - TURNS, 0) if after > 0 else None,
        notice=notice,
        refusal=as_sentence(refused.message) if refused else None,
        step_label=step_label,
    )


async def _act(request: web.Request, visit: Visit, api: str, done: str) -> web.StreamResponse:
    """Ask the API for the change `api` of the run, then back to its page with a notice — or
    the page again, saying why the API refused."""
    run_id = request.match_info["id"]
    try:
        await visit.api.call("POST", api_path("runs", run_id, api), body={})
    except ApiRefused as refused:
        if refused.status == 404:
            raise
        return await _run_page(request, visit, refused=refused)
    return _back(run_id, done)


@page
async def cancel(request: web.Request, visit: Visit) -> web.StreamResponse:
    return await _act(request, visit, "cancel", "cancelled")


@page
async def retry(request: web.Request, visit: Visit) -> web.StreamResponse:
    return await _act(request, visit, "retry", "retried")


@page
async def fresh(request: web.Request, visit: Visit) -> web.StreamResponse:
    if request.method == "POST":
        return await _act(request, visit, "sessions", "fresh")
    shown = await visit.api.get(api_path("runs", request.match_info["id"]))
    return render("runs_fresh.html", **visit.context("runs"), run=shown)


@page
async def token(request: web.Request, visit: Visit) -> web.StreamResponse:
    run_id = request.match_info["id"]
    minted = await visit.api.call("POST", api_path("runs", run_id, "token"), body={})
    shown = await visit.api.get(api_path("runs", run_id))
    return render("runs_token.html", **visit.context("runs"), run=shown, token=minted.body["token"])
