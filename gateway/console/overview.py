"""The console's first page, `GET /console`: the gateway at a glance.

Its figures come from four reads of the operator API — `GET /api/v1/overview` (threads, runs by
what they are doing, failed turns in the last hour), `GET /api/v1/endpoints` (by status),
`GET /api/v1/replicas` and `GET /api/v1/roles` — and each links to the list it counts where the
console has that page (conversations, and each role's conversations); the others say so.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aiohttp import web

from gateway.console.api import api_path
from gateway.console.guard import Visit, page
from gateway.console.render import render

ENDPOINT_STATUSES = ("active", "parked", "disabled")
RUN_STATES = ("running", "awake", "asleep", "not_opened", "failed")


@page
async def overview(request: web.Request, visit: Visit) -> web.StreamResponse:
    figures: dict[str, Any] = await visit.api.get(api_path("overview"))
    endpoints = (await visit.api.get(api_path("endpoints")))["endpoints"]
    replicas = (await visit.api.get(api_path("replicas")))["replicas"]
    roles = (await visit.api.get(api_path("roles")))["roles"]
    by_status = Counter(str(e.get("status")) for e in endpoints)
    return render(
        "overview.html",
        **visit.context("overview"),
        figures=figures,
        run_states=RUN_STATES,
        endpoints={status: by_status.get(status, 0) for status in ENDPOINT_STATUSES},
        endpoint_count=len(endpoints),
        replicas=replicas,
        live_replicas=sum(1 for r in replicas if r.get("live")),
        roles=roles,
    )
