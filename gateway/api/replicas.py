"""The replicas serving this database (docs/scale.md), and whether this one is ready.

    GET /api/v1/replicas   {"replicas": [{id, address, started, last_heartbeat, live,
                           runs_owned, this}, …], "this": id}; `?stopped=true` lists those
                           that stopped cleanly too
    GET /readyz            200 {"status": "ready", "replica": id} once this replica is
                           registered (and, on PostgreSQL, listening for the other replicas'
                           commits); 503 `not_ready` with what is missing otherwise

A replica is `live` while its last heartbeat is more recent than `ROLECALL_REPLICA_TIMEOUT`;
`runs_owned` counts the runs whose lease it holds, unexpired.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.errors import ApiError
from channels.edge.leasing import now_micros
from channels.edge.requests import DATABASE_KEY, read_query
from core.storage.replicas_store import Replica
from core.storage.rows import from_micros
from gateway.replica import REPLICA_KEY, ThisReplica

routes = web.RouteTableDef()


@routes.get("/api/v1/replicas")
async def list_replicas(request: web.Request) -> web.Response:
    query = read_query(request, ["stopped"])
    stopped = query.get("stopped", "false")
    if stopped not in ("true", "false"):
        raise ApiError(422, "invalid_parameter", "stopped must be true or false")
    me = request.app[REPLICA_KEY]
    now = now_micros()
    replicas = await request.app[DATABASE_KEY].replicas.list(
        now=now, include_stopped=stopped == "true"
    )
    return web.json_response(
        {"replicas": [replica_json(r, me, now) for r in replicas], "this": me.id}
    )


def replica_json(replica: Replica, me: ThisReplica, now: int) -> dict[str, Any]:
    return {
        "id": replica.id,
        "address": replica.address,
        "started": from_micros(replica.started_at).isoformat(),
        "last_heartbeat": from_micros(replica.heartbeat_at).isoformat(),
        "stopped": from_micros(replica.stopped_at).isoformat() if replica.stopped_at else None,
        "live": replica.stopped_at is None and now - replica.heartbeat_at < me.ttl,
        "runs_owned": replica.runs_owned,
        "this": replica.id == me.id,
    }


@routes.get("/readyz")
async def readyz(request: web.Request) -> web.Response:
    read_query(request, [])
    me = request.app.get(REPLICA_KEY)
    missing: list[str] = []
    if me is None or not me.registered:
        missing.append("not registered as a replica")
    database = request.app.get(DATABASE_KEY)
    notifications = getattr(database, "notifications", None) if database is not None else None
    if notifications is not None and not getattr(notifications, "connected", True):
        missing.append("not listening for the other replicas' commits")
    if missing:
        raise ApiError(
            503,
            "not_ready",
            f"this replica is not ready: {'; '.join(missing)}",
            headers={"Retry-After": "1"},
        )
    assert me is not None
    return web.json_response({"status": "ready", "replica": me.id})
