"""The gateway at a glance, for operators (the console's overview page reads it).

    GET /api/v1/overview   {"at", "replica", "threads", "runs": {…}, "failures_last_hour",
                            "last_hour": {…}, "deliveries": {…}, "replicas": {…}}

- `threads`: every thread (conversations and group threads alike).
- `runs`: `total`, `failed` (the run's status: its last turn failed every attempt), and what each
  run is doing now, as `GET /api/v1/runs/{id}` tells it: `running` (a turn of it runs), `awake`
  (its session is held, no turn runs), `asleep` (its session was opened once and is not held:
  the next news wakes it) and `not_opened` (its current session has not been opened yet). Those
  four add up to `total`; `failed` overlaps them.
- `last_hour` (`core.model.activity`): the turns that finished in the current minute and the 59
  before it — how many, how many failed, per minute on average, p50 and p95 of their durations,
  the failed turns and runs per role, and both counts minute by minute (60 of them, oldest
  first). `failures_last_hour` is its `failed`.
- `deliveries` (`core.storage.overview_reads`): what waits to go out, per channel — each Slack
  role's events past its cursor and posts meant but not recorded; the outbound endpoints by
  status and the events past the cursors of those not disabled (and of the parked ones alone);
  the widget streams open on this replica and the items queued for them.
- `replicas`: how many replicas are registered (not stopped cleanly) and how many are live.

What a run is doing now, and the widget's streams, are what the replica that answers
(`replica`) holds: with several replicas, a run held by another one counts as `asleep` here
(each replica's own are in `GET /api/v1/replicas`, `runs_owned`). The threads and runs counts
are aggregates over those tables (no row of them crosses into Python but the runs held here); the
last hour and the deliveries are counted by indexed ranges (see `core.storage.overview_reads`),
never from the events or the turns' rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, HOST_KEY, read_query
from channels.web.routes import WEB_KEY
from core.model.activity import Hour, hour_since
from core.model.timeline import rfc3339
from core.storage.database import Database
from core.storage.rows import from_micros, to_micros
from gateway.api.replicas import replica_json
from gateway.replica import REPLICA_KEY

routes = web.RouteTableDef()


def _millis(micros: int) -> float:
    return micros / 1000


def hour_json(hour: Hour) -> dict[str, Any]:
    latency = hour.latency
    return {
        "since": rfc3339(from_micros(hour.since)),
        "turns": hour.turns,
        "failed": hour.failed,
        "per_minute": round(hour.per_minute, 2),
        "latency_ms": (
            {"p50": _millis(latency.p50), "p95": _millis(latency.p95)} if latency else None
        ),
        "failures": [{"role": f.role, "turns": f.turns, "runs": f.runs} for f in hour.failures],
        "minutes": [
            {"at": rfc3339(from_micros(m.start)), "turns": m.turns, "failed": m.failed}
            for m in hour.minutes
        ],
    }


async def _deliveries(request: web.Request, database: Database) -> dict[str, Any]:
    slack = await database.console.slack_backlog()
    endpoints = await database.console.endpoint_backlog()
    web_channel = request.app.get(WEB_KEY)
    return {
        "slack": [{"role": s.role, "behind": s.behind, "intents": s.intents} for s in slack],
        "endpoints": {
            **endpoints.counts,
            "behind": endpoints.behind,
            "behind_parked": endpoints.behind_parked,
        },
        "widget": {
            "streams": web_channel.fanout.open_streams if web_channel else 0,
            "queued": web_channel.fanout.queued if web_channel else 0,
        },
    }


async def _runs(request: web.Request, database: Database) -> dict[str, int]:
    held = request.app[HOST_KEY].held()
    census = await database.console.run_census(held.unread)
    gone = held.unread - census.stored_of  # removed since it was read: not counted
    running, awake = held.running - gone, held.awake - gone
    asleep = census.opened - len(held.opened) - len(census.opened_of)
    return {
        "total": census.total,
        "failed": census.failed,
        "running": len(running),
        "awake": len(awake),
        "asleep": max(asleep, 0),
        "not_opened": max(census.total - len(running) - len(awake) - max(asleep, 0), 0),
    }


@routes.get("/api/v1/overview")
async def overview(request: web.Request) -> web.Response:
    read_query(request, [])
    database, me = request.app[DATABASE_KEY], request.app[REPLICA_KEY]
    now = datetime.now(UTC)
    at = to_micros(now)
    since = hour_since(at)
    hour = await database.console.last_hour(since)
    replicas = [replica_json(r, me, at) for r in await database.replicas.list(now=at)]
    return web.json_response(
        {
            "at": rfc3339(now),
            "replica": me.id,
            "threads": await database.console.count_threads(),
            "runs": await _runs(request, database),
            "failures_last_hour": hour.failed,
            "last_hour": hour_json(hour),
            "deliveries": await _deliveries(request, database),
            "replicas": {"total": len(replicas), "live": sum(1 for r in replicas if r["live"])},
        }
    )
