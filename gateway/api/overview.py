"""The gateway at a glance, for operators (the console's overview page reads it).

    GET /api/v1/overview   {"at", "replica", "threads", "runs": {…}, "failures_last_hour"}

- `threads`: every thread (conversations and group threads alike).
- `runs`: `total`, `failed` (the run's status: its last turn failed every attempt), and what each
  run is doing now, as `GET /api/v1/runs/{id}` tells it: `running` (a turn of it runs), `awake`
  (its session is held, no turn runs), `asleep` (its session was opened once and is not held:
  the next news wakes it) and `not_opened` (its current session has not been opened yet). Those
  four add up to `total`; `failed` overlaps them.
- `failures_last_hour`: turns that ended failed (every attempt failed) in the hour before `at`.

What a run is doing now is what the run host of the replica that answers (`replica`) holds: with
several replicas, a run held by another one counts as `asleep` here (each replica's own are in
`GET /api/v1/replicas`, `runs_owned`). The counts scan the threads, runs and turns tables: a few
milliseconds for ten thousand runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, HOST_KEY, read_query
from core.model.timeline import rfc3339
from core.storage.rows import to_micros
from gateway.replica import REPLICA_KEY

routes = web.RouteTableDef()

FAILURES_WITHIN = timedelta(hours=1)


@routes.get("/api/v1/overview")
async def overview(request: web.Request) -> web.Response:
    read_query(request, [])
    database, host = request.app[DATABASE_KEY], request.app[HOST_KEY]
    now = datetime.now(UTC)
    threads = await database.console.count_threads()
    census = await database.console.run_census()
    failures = await database.console.failed_turns_since(to_micros(now - FAILURES_WITHIN))
    running = awake = asleep = 0
    for run_id in census.ids:
        if host.is_running(run_id):
            running += 1
        elif host.is_awake(run_id):
            awake += 1
        elif run_id in census.opened:
            asleep += 1
    total = len(census.ids)
    return web.json_response(
        {
            "at": rfc3339(now),
            "replica": request.app[REPLICA_KEY].id,
            "threads": threads,
            "runs": {
                "total": total,
                "failed": len(census.failed),
                "running": running,
                "awake": awake,
                "asleep": asleep,
                "not_opened": total - running - awake - asleep,
            },
            "failures_last_hour": failures,
        }
    )
