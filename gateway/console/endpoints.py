"""The console's endpoints: every outbound webhook endpoint with its standing and backlog, one
endpoint with its delivery log, and replay from a position after a page that says what it does.

    GET  /console/endpoints                             every endpoint
    GET  /console/endpoints/{id}[?before=SEQ&failed=1]  one endpoint and its delivery log
    GET  /console/endpoints/{id}/replay?from_position=N&from_task_position=M
                                                        what replaying does (a confirmation)
    POST /console/endpoints/{id}/replay                 replay it (CSRF)

**Reading.** The list is `GET /api/v1/endpoints`: each endpoint's URL, status (active, parked,
disabled), cursors, its backlog (`pending`: the events past its cursors, of the kinds it wants)
and its last failure. An endpoint's page adds its filters, why it is failing or what parked it
(its `reason`, and the logged attempt that parked it: while it is parked that is its
`last_failure`), and its delivery log (`GET /api/v1/endpoints/{id}/deliveries`), newest
attempt first, `PAGE` at a time, all attempts or the failed ones.

**Replay.** The endpoint's page has a form (GET) with the positions to deliver again from; the
confirmation page says, from the endpoint's cursors and status, what replaying from them does —
active again with no failures; which events are sent again, which are skipped, or that a stream
goes on where it stopped — and posts the same positions with the session's CSRF token to
`POST /api/v1/endpoints/{id}/replay` (audited as the session's operator). Then the browser goes
back to the endpoint's page with a notice (POST, redirect, GET). A position that is not a whole
number is refused on the confirmation page before anything is asked; the API's refusal (a
position beyond the stream's head: 422 `invalid_position`) is the confirmation page again with
its sentence and status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gateway.console.api import ApiRefused, api_path
from gateway.console.guard import Visit, as_sentence, page
from gateway.console.render import render

PAGE = 50
FIELDS = {"from_position": "timeline position", "from_task_position": "task-event position"}
REPLAYED = "The endpoint was replayed: it is active again and delivers from where it was told."


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """The positions a replay was asked for (None: that stream goes on where it stopped), or
    why they cannot be asked for."""

    positions: Mapping[str, int | None]
    wrong: str | None = None

    def body(self) -> dict[str, int]:
        return {name: value for name, value in self.positions.items() if value is not None}


def asked_replay(values: Mapping[str, str]) -> Replay:
    """The positions of the form: blank, or a whole number."""
    positions: dict[str, int | None] = {}
    for name, what in FIELDS.items():
        raw = values.get(name, "").strip()
        if not raw:
            positions[name] = None
        elif raw.isdigit() and len(raw) <= 16:
            positions[name] = int(raw)
        else:
            wrong = f"A {what} is a whole number, or left blank; {raw[:40]!r} is not one."
            return Replay(positions={}, wrong=wrong)
    return Replay(positions=positions)


def stream_plan(start: int | None, cursor: int, pending: int, what: str) -> str:
    """What a replay does to one stream of an endpoint whose cursor is `cursor`."""
    if start is None:
        waiting = f"{pending} event{'' if pending == 1 else 's'} of the kinds it wants wait"
        return f"goes on with {what}s where it stopped: after position {cursor} ({waiting})"
    if start <= cursor:
        return (
            f"sends {what}s again from position {start} on, in order: those from {start} to "
            f"{cursor} it had accepted before are sent a second time (a receiver tells a "
            "repeat by its webhook-id)"
        )
    if start == cursor + 1:
        return f"delivers {what}s from position {start} on: where it stopped, nothing skipped"
    return (
        f"skips the {what}s from position {cursor + 1} to {start - 1}: they are never sent; "
        f"delivery starts at position {start}"
    )


def replay_plan(endpoint: dict[str, Any], replay: Replay) -> list[str]:
    """What replaying `endpoint` from `replay`'s positions does, a sentence each."""
    plan = ["It becomes active again with no failures in a row."]
    if endpoint["status"] != "active":
        plan[0] = f"It is {endpoint['status']} now ({endpoint['reason']}); " + (
            "it becomes active again with no failures in a row."
        )
    pending = endpoint["pending"]
    if [kind for kind in endpoint["kinds"] if kind != "task"]:
        start = replay.positions.get("from_position")
        plan.append(
            "It "
            + stream_plan(start, endpoint["position"], pending["events"], "timeline event")
            + "."
        )
    if "task" in endpoint["kinds"]:
        start = replay.positions.get("from_task_position")
        plan.append(
            "It "
            + stream_plan(start, endpoint["task_position"], pending["task_events"], "task event")
            + "."
        )
    plan.append(
        "Events are sent as they read now, one at a time, each once its filters want it: a "
        "message retracted since is sent as retracted."
    )
    return plan


@page
async def endpoints(request: web.Request, visit: Visit) -> web.StreamResponse:
    found = (await visit.api.get(api_path("endpoints")))["endpoints"]
    counts = {status: 0 for status in ("active", "parked", "disabled")}
    for endpoint in found:
        counts[endpoint["status"]] = counts.get(endpoint["status"], 0) + 1
    return render("endpoints.html", **visit.context("endpoints"), endpoints=found, counts=counts)


@page
async def endpoint(request: web.Request, visit: Visit) -> web.StreamResponse:
    endpoint_id = request.match_info["id"]
    shown = await visit.api.get(api_path("endpoints", endpoint_id))
    before = request.query.get("before") or None
    failed = request.query.get("failed") == "1"
    query = {"before": before, "failed": failed or None, "limit": PAGE}
    log = await visit.api.get(api_path("endpoints", endpoint_id, "deliveries"), query)
    return render(
        "endpoint.html",
        **visit.context("endpoints"),
        endpoint=shown,
        deliveries=log["deliveries"],
        older=log["next"],
        before=before,
        failed=failed,
        notice=REPLAYED if request.query.get("done") == "replayed" else None,
    )


@page
async def replay(request: web.Request, visit: Visit) -> web.StreamResponse:
    endpoint_id = request.match_info["id"]
    asked = asked_replay(visit.form if request.method == "POST" else request.query)
    if request.method == "POST" and asked.wrong is None:
        try:
            await visit.api.call(
                "POST", api_path("endpoints", endpoint_id, "replay"), body=asked.body()
            )
        except ApiRefused as refused:
            if refused.status == 404:
                raise
            return await _confirm(visit, endpoint_id, asked, refused)
        location = f"/console/endpoints/{endpoint_id}?done=replayed"
        return web.Response(status=303, headers={"Location": location})
    return await _confirm(visit, endpoint_id, asked)


async def _confirm(
    visit: Visit, endpoint_id: str, asked: Replay, refused: ApiRefused | None = None
) -> web.Response:
    shown = await visit.api.get(api_path("endpoints", endpoint_id))
    refusal = as_sentence(refused.message) if refused else asked.wrong
    status = refused.status if refused else (422 if asked.wrong else 200)
    return render(
        "endpoint_replay.html",
        status=status,
        **visit.context("endpoints"),
        endpoint=shown,
        positions=asked.positions,
        plan=replay_plan(shown, asked) if asked.wrong is None else [],
        refusal=refusal,
    )
