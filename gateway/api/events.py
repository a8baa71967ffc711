"""The committed-event stream over HTTP, for operators and outside listeners.

    GET /api/v1/events?after=POSITION[&limit=N&wait=SECONDS]

Events of every thread with `position > after`, in position order: `{"events": […], "next": P}`;
resume with `after=P`. With `wait`, the request is held (long poll, at most 30 s) until something
past `after` is committed, then answered at once; an empty page when nothing came. Positions are
only handed out once everything before them is committed, so a reader resuming from `next`
never misses an event.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, query_int, read_query
from core.model.serialize import event_json
from core.storage.pages import MAX_PAGE

routes = web.RouteTableDef()

MAX_WAIT_SECONDS = 30


@routes.get("/api/v1/events")
async def read_events(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit", "wait"])
    after = query_int(params, "after", default=0, low=0)
    limit = query_int(params, "limit", default=MAX_PAGE, low=1, high=MAX_PAGE)
    wait = query_int(params, "wait", default=0, low=0, high=MAX_WAIT_SECONDS)
    database = request.app[DATABASE_KEY]
    if wait:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await database.bus.wait_beyond(after)
    page = await database.threads.events_since(after, limit=limit)
    return web.json_response({"events": [event_json(e) for e in page.events], "next": page.next})
