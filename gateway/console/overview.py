"""The console's first page, `GET /console`: the gateway at a glance.

Its figures come from three reads of the operator API — `GET /api/v1/overview` (threads, runs by
what they are doing, the last hour's turns, their latency and failures, deliveries waiting per
channel, replicas), `GET /api/v1/replicas` (each replica's line) and `GET /api/v1/roles` — and
each links to the list it counts: conversations, runs (each role's failed runs), the Slack and
Endpoints pages, each role's conversations. The last hour is also drawn as a chart
(`gateway.console.chart`), with its numbers in a table beside it for screen readers.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.console.api import api_path
from gateway.console.chart import chart
from gateway.console.guard import Visit, page
from gateway.console.render import render

RUN_STATES = ("running", "awake", "asleep", "not_opened", "failed")
ENDPOINT_STATUSES = ("active", "parked", "disabled")


def duration(ms: float) -> str:
    """A turn's duration as a person reads it: milliseconds under a second, else seconds."""
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


@page
async def overview(request: web.Request, visit: Visit) -> web.StreamResponse:
    figures: dict[str, Any] = await visit.api.get(api_path("overview"))
    replicas = (await visit.api.get(api_path("replicas")))["replicas"]
    roles = (await visit.api.get(api_path("roles")))["roles"]
    hour = figures["last_hour"]
    return render(
        "overview.html",
        **visit.context("overview"),
        figures=figures,
        hour=hour,
        deliveries=figures["deliveries"],
        run_states=RUN_STATES,
        endpoint_statuses=ENDPOINT_STATUSES,
        replicas=replicas,
        roles=roles,
        chart=chart(hour["minutes"]),
        duration=duration,
    )
