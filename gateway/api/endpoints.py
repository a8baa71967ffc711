"""Outbound webhook endpoints over HTTP, for operators, and their delivery workers' lifecycle.

    POST   /api/v1/endpoints               register: {url, kinds?, roles?, threads?,
                                           from_position?, from_task_position?} -> 201, with
                                           its signing secret (shown only here)
    GET    /api/v1/endpoints               every endpoint, oldest first, with its backlog
    GET    /api/v1/endpoints/{id}          one: status, reason, failures, cursors, next attempt,
                                           pending events and its last failure
    GET    /api/v1/endpoints/{id}/deliveries[?before=SEQ&failed=true&limit=N]
                                           its delivery log, newest attempt first
    POST   /api/v1/endpoints/{id}/replay   {from_position?, from_task_position?}: deliver again
                                           from there (inclusive); active again if parked or
                                           disabled
    DELETE /api/v1/endpoints/{id}          delete it; its deliveries stop

Filters are checked against what this gateway has: roles it serves, threads that exist. The
URL's host must resolve to global addresses only, unless `ROLECALL_ENDPOINTS_ALLOW_PRIVATE`
(checked again at every connection: `channels.webhooks.outbound`).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

from aiohttp import web

from channels.edge.leasing import LeaseTerms
from channels.edge.requests import (
    DATABASE_KEY,
    ROLES_KEY,
    created,
    field,
    query_bool,
    query_int,
    read_object,
    read_query,
)
from channels.webhooks.outbound import Outbound
from core.model.endpoints import (
    SECRET_BYTES,
    Endpoint,
    EndpointId,
    Filters,
    RetryPolicy,
    new_secret,
    parse_kinds,
    parse_position,
    parse_roles,
    parse_threads,
    parse_url,
)
from core.model.errors import InvalidInput, NotFound
from core.model.timeline import ThreadId
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.audit import audited, note
from gateway.replica import REPLICA_KEY
from gateway.settings import Settings, lease_terms

OUTBOUND_KEY = web.AppKey("outbound", Outbound)

routes = web.RouteTableDef()


def add_routes(app: web.Application, settings: Settings) -> None:
    """The routes, and the delivery workers started and stopped with the gateway (after the
    database has opened, before it closes); with replicas, each endpoint delivered by one of
    them at a time (`channels.webhooks.outbound`)."""
    app.add_routes(routes)
    leases = lease_terms(settings, app[REPLICA_KEY])
    app.cleanup_ctx.append(lambda app: _lifecycle(app, settings, leases))


async def _lifecycle(
    app: web.Application, settings: Settings, leases: LeaseTerms
) -> AsyncIterator[None]:
    outbound = Outbound(
        app[DATABASE_KEY],
        policy=RetryPolicy(
            base=settings.endpoints_backoff_base,
            cap=settings.endpoints_backoff_cap,
            park_after=settings.endpoints_park_after,
        ),
        allow_private=settings.endpoints_allow_private,
        timeout=settings.endpoints_timeout,
        leasing=leases.leasing(app[DATABASE_KEY].leases),
    )
    try:
        await outbound.start()
        app[OUTBOUND_KEY] = outbound
        yield
    finally:
        await outbound.stop()


@routes.post("/api/v1/endpoints")
@audited("endpoint.create")
async def create_endpoint(request: web.Request) -> web.Response:
    body = await read_object(
        request,
        required=["url"],
        optional=["kinds", "roles", "threads", "from_position", "from_task_position"],
    )
    url = field(body, "url", parse_url)
    filters = Filters(
        kinds=field(body, "kinds", parse_kinds),
        roles=field(body, "roles", parse_roles),
        threads=field(body, "threads", parse_threads),
    )
    start = field(body, "from_position", parse_position)
    task_start = field(body, "from_task_position", parse_position)
    await _check_filters(request, filters)
    outbound = request.app[OUTBOUND_KEY]
    await outbound.check(url)
    endpoint = await request.app[DATABASE_KEY].endpoints.create(
        url=url,
        secret=new_secret(secrets.token_bytes(SECRET_BYTES)),
        filters=filters,
        start=start,
        task_start=task_start,
    )
    await outbound.refresh(endpoint.id)
    note(request, endpoint_id=endpoint.id, url=endpoint.url, **endpoint.filters.to_json())
    shown = {**endpoint.to_json(), "secret": endpoint.secret}
    return created(shown, f"/api/v1/endpoints/{endpoint.id}")


async def _check_filters(request: web.Request, filters: Filters) -> None:
    served = request.app[ROLES_KEY]
    if unknown := sorted(filters.roles - set(served)):
        raise InvalidInput(
            f"roles: no role named {unknown[0]!r} is served here", code="unknown_role"
        )
    threads = request.app[DATABASE_KEY].threads
    for thread_id in sorted(filters.threads):
        try:
            await threads.get(ThreadId(thread_id))
        except NotFound:
            raise InvalidInput(
                f"threads: no thread with id {thread_id!r}", code="unknown_thread"
            ) from None


@routes.get("/api/v1/endpoints")
async def list_endpoints(request: web.Request) -> web.Response:
    read_query(request, [])
    found = await request.app[DATABASE_KEY].endpoints.all_with_backlog()
    shown = [{**endpoint.to_json(), **ahead.to_json()} for endpoint, ahead in found]
    return web.json_response({"endpoints": shown})


@routes.get("/api/v1/endpoints/{id}")
async def show_endpoint(request: web.Request) -> web.Response:
    read_query(request, [])
    endpoint, ahead = await request.app[DATABASE_KEY].endpoints.with_backlog(
        request.match_info["id"]
    )
    return web.json_response({**endpoint.to_json(), **ahead.to_json()})


@routes.get("/api/v1/endpoints/{id}/deliveries")
async def list_deliveries(request: web.Request) -> web.Response:
    params = read_query(request, ["before", "failed", "limit"])
    before = query_int(params, "before", default=0, low=1) if "before" in params else None
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    found, more = await request.app[DATABASE_KEY].endpoints.deliveries(
        request.match_info["id"], before=before, failed=query_bool(params, "failed"), limit=limit
    )
    return web.json_response(
        {
            "deliveries": [d.to_json() for d in found],
            "next": found[-1].seq if more and found else None,
        }
    )


@routes.post("/api/v1/endpoints/{id}/replay")
@audited("endpoint.replay")
async def replay_endpoint(request: web.Request) -> web.Response:
    body = await read_object(
        request, optional=["from_position", "from_task_position"], empty_ok=True
    )
    endpoint_id = EndpointId(request.match_info["id"])
    before = await request.app[DATABASE_KEY].endpoints.get(endpoint_id)
    endpoint = await request.app[DATABASE_KEY].endpoints.replay(
        endpoint_id,
        start=field(body, "from_position", parse_position),
        task_start=field(body, "from_task_position", parse_position),
    )
    await request.app[OUTBOUND_KEY].refresh(endpoint_id)
    note(request, endpoint_id=endpoint_id, before=_standing(before), after=_standing(endpoint))
    return web.json_response(endpoint.to_json())


def _standing(endpoint: Endpoint) -> dict[str, object]:
    """What a replay changes of an endpoint, for its audit record."""
    return {
        "status": endpoint.status.value,
        "position": endpoint.cursors.position,
        "task_position": endpoint.cursors.task_position,
    }


@routes.delete("/api/v1/endpoints/{id}")
@audited("endpoint.delete")
async def delete_endpoint(request: web.Request) -> web.Response:
    read_query(request, [])
    endpoint_id = EndpointId(request.match_info["id"])
    endpoint = await request.app[DATABASE_KEY].endpoints.delete(endpoint_id)
    await request.app[OUTBOUND_KEY].refresh(endpoint_id)
    note(request, endpoint_id=endpoint_id, url=endpoint.url)
    return web.json_response({**endpoint.to_json(), "deleted": True})
