"""Serving in tests: the one serving helper, for the gateway under test and the fakes of the
outside world (model endpoints, remote agents, webhook receivers, Slack's Web API).

`serve(app)` serves an aiohttp application (or one plain handler, for every path and method) on
127.0.0.1, on a free port unless given one, for the length of an `async with`, and stops it
afterwards. What it yields is aiohttp's `TestServer`: `make_url(path)`, `port`, `host`.

By default a handler is cancelled when its client goes away (aiohttp's test server); a test of
the edge that needs the handlers to run on, as `web.run_app` (`rolecall serve`) lets them, asks
for `as_in_production=True`.

`free_port()` is a port nothing listens on now, for a server that must be told its port before
it starts (the gateway's settings, a PostgreSQL cluster, a restart on the same port).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _RunningOn(TestServer):
    """A `TestServer` whose handlers run on when the client goes away, as under `web.run_app`:
    aiohttp's test server cancels them instead."""

    async def _make_runner(self, **kwargs: Any) -> web.BaseRunner:
        kwargs["handler_cancellation"] = False
        return web.AppRunner(self.app, **kwargs)


def application(handler: Handler) -> web.Application:
    """An application answering every method and path with `handler`."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    return app


@asynccontextmanager
async def serve(
    app: web.Application | Handler,
    *,
    port: int | None = None,
    as_in_production: bool = False,
) -> AsyncIterator[TestServer]:
    """`app` served on 127.0.0.1 (`port`, or a free one) until the block ends."""
    if not isinstance(app, web.Application):
        app = application(app)
    kind = _RunningOn if as_in_production else TestServer
    server = kind(app, host="127.0.0.1", port=port)
    await server.start_server()
    try:
        yield server
    finally:
        await server.close()
