"""A conversation's new events, live, for its console page: Server-Sent Events.

    GET /console/conversations/{id}/stream?after=SEQ[&as=ADDR]   (or `Last-Event-ID: SEQ`)

The stream follows the committed-event bus (`db.bus`, which only nudges: `core.storage.bus`) and,
each time it moves, reads the thread's timeline after the last `seq` it sent through the
operator API (`GET /api/v1/threads/{id}/timeline?after=…&include_archived=true`, with `as` when
the page views as a participant: the visibility filter applies as on the page). Each event is
sent as the HTML of one timeline line (`event: timeline`, `id:` its `seq`, so a reconnecting
browser resumes after the last one it got); the script puts it at the end of the list.

The bus's head is taken before each read, and the stream waits only for a head beyond it, so a
commit that lands while a page is read is never missed. The session is checked again at every
wake and at least every `CHECK_EVERY` seconds: a session that ended (signed out, expired, its
token revoked) gets `event: ended` with a sentence, and the stream closes. Without a session the
stream is 401 (the API's JSON error); a thread that does not exist, or an `as` who was never a
member, is the API's refusal, before the stream starts.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web
from aiohttp_sse import EventSourceResponse

from channels.edge.errors import ApiError
from channels.edge.requests import DATABASE_KEY
from core.storage.bus import CommittedEvents
from core.storage.console_store import ConsoleSession
from core.storage.pages import MAX_PAGE
from gateway.console.api import ApiRefused, ConsoleApi, api_path
from gateway.console.guard import CONSOLE_KEY, as_sentence, client_of, data_session, signed_in
from gateway.console.render import HEADERS, fragment
from gateway.console.timeline import shown
from gateway.operators import Operator

PING_SECONDS = 15.0
CHECK_EVERY = 15.0
"""Seconds at most between two checks of the session while nothing is committed."""
RECONNECT_MS = 1000


class _Reader:
    def __init__(self, api: ConsoleApi, thread_id: str, viewer: str | None) -> None:
        self._api = api
        self._path = api_path("threads", thread_id, "timeline")
        self._viewer = viewer

    async def after(self, seq: int) -> dict[str, Any]:
        query = {"as": self._viewer, "after": seq, "limit": MAX_PAGE, "include_archived": True}
        page: dict[str, Any] = await self._api.get(self._path, query)
        return page


def _resume_from(request: web.Request) -> int:
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    if not raw.isdigit() or len(raw) > 16:
        raise ApiError(
            422, "invalid_parameter", f"after must be a seq (a whole number), not {raw!r}"
        )
    return int(raw)


async def follow(request: web.Request) -> web.StreamResponse:
    base = request.clone()
    session = await data_session(request)
    api = ConsoleApi(base, Operator(name=session.operator, client=client_of(request)))
    viewer = request.query.get("as") or None
    reader = _Reader(api, request.match_info["id"], viewer)
    last = _resume_from(request)
    bus = request.app[DATABASE_KEY].bus
    head = bus.head
    try:
        page = await reader.after(last)
    except ApiRefused as refused:
        raise ApiError(refused.status, refused.code, refused.message) from None
    response = EventSourceResponse(ping_interval=PING_SECONDS, headers=HEADERS)
    await response.prepare(request)
    streams = request.app[CONSOLE_KEY].streams
    streams.add(response)
    closed = asyncio.ensure_future(response.wait())
    try:
        await response.send("{}", event="ready", retry=RECONNECT_MS)
        while True:
            for event in page["events"]:
                line = fragment("event.html", "event", shown(event, viewer))
                await response.send(line, id=str(event["seq"]), event="timeline")
                last = int(event["seq"])
            if not page["more"]:
                if not await _next_commit(bus, head, closed):
                    return response
                ended = await _ended(request)
                if ended is not None:
                    await response.send(ended, event="ended")
                    return response
            head = bus.head
            page = await reader.after(last)
    except ApiRefused as refused:
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.send(as_sentence(refused.message), event="problem")
        return response
    except (ConnectionResetError, RuntimeError):
        return response  # the browser went away mid-send
    finally:
        closed.cancel()
        streams.discard(response)


async def _next_commit(bus: CommittedEvents, head: int, closed: asyncio.Future[None]) -> bool:
    """Wait for a commit past `head`, or `CHECK_EVERY` seconds; False once the browser left."""
    waiting: asyncio.Future[Any] = asyncio.ensure_future(bus.wait_beyond(head))
    either: set[asyncio.Future[Any]] = {waiting, closed}
    try:
        await asyncio.wait(either, timeout=CHECK_EVERY, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    return not closed.done()


async def _ended(request: web.Request) -> str | None:
    """A sentence when the session ended since the stream began, else None."""
    if isinstance(await signed_in(request), ConsoleSession):
        return None
    return "Your console session has ended: reload the page to sign in again."


async def close_streams(app: web.Application) -> None:
    """Open streams end when the gateway stops (browsers reconnect with `Last-Event-ID`)."""
    for response in list(app[CONSOLE_KEY].streams):
        with contextlib.suppress(RuntimeError):
            response.stop_streaming()
