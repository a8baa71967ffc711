"""The agent's tools over MCP: `/mcp`, streamable HTTP, the run token as bearer.

The same tools as `POST /api/v1/tools/{name}` (`core.tools.TOOLS`: one implementation, one JSON
schema each), served by the official `mcp` SDK (gateway/mcp_server.py: its low-level `Server` and
its stateless `StreamableHTTPSessionManager`, answering in JSON). The SDK speaks ASGI;
`serve_asgi` carries one aiohttp request through it.

The SDK is loaded when it is first needed: at start when a configured role's runtime hands its
agents a run token (their tools are reached over MCP), otherwise at the first request to `/mcp`
(say with a token an operator minted), imported in a worker thread so the event loop keeps
serving meanwhile. A gateway whose agents are all built-in does not hold it in memory.

The caller is resolved from `Authorization: Bearer <run token>` twice over: before the request
reaches the SDK (a missing, unknown or refused token gets the plain HTTP 401/403 an MCP client
expects, with `WWW-Authenticate`), and again at every tool call (`run_for_bearer`), so a run whose
person is removed mid-session is refused at its next call. A tool's domain error comes back as an
MCP tool error (`isError`) carrying `{"error": {"code", "message"}}` as its structured content —
the same body the HTTP surface answers with.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from gateway.api.tools import run_of_token
from gateway.errors import ApiError

MCP_PATH = "/mcp"

log = logging.getLogger("rolecall.gateway")

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class McpEndpoint:
    """The MCP server of one application, started the first time it is asked for and stopped
    with the application."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._asgi: Asgi | None = None
        self._starting = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def asgi(self) -> Asgi:
        if self._asgi is None:
            async with self._starting:
                if self._asgi is None:
                    self._asgi = await self._start()
        return self._asgi

    async def _start(self) -> Asgi:
        server = await asyncio.to_thread(importlib.import_module, "gateway.mcp_server")
        ready: asyncio.Future[Asgi] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(
            server.serve(self._app, ready, self._stop), name="mcp-session-manager"
        )
        either: set[asyncio.Future[Any]] = {self._task, ready}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            self._task.result()  # it failed to start: raise why
            raise RuntimeError("the MCP session manager ended before it started")
        return ready.result()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await self._task
            except Exception:  # stopping regardless; say why it had failed
                log.warning("the MCP session manager ended with an error", exc_info=True)


MCP_KEY = web.AppKey("mcp", McpEndpoint)


def add_routes(app: web.Application, *, at_start: bool) -> None:
    """Serve `/mcp`; with `at_start`, load the SDK before the gateway starts serving (a role's
    agents will call their tools over MCP)."""

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        endpoint = app[MCP_KEY] = McpEndpoint(app)
        try:
            if at_start:
                await endpoint.asgi()
            yield
        finally:
            await endpoint.close()

    app.cleanup_ctx.append(lifecycle)
    app.router.add_route("*", MCP_PATH, handle)


async def handle(request: web.Request) -> web.StreamResponse:
    await run_of_token(request.app, request.headers.get("Authorization", ""))
    return await serve_asgi(request, await request.app[MCP_KEY].asgi())


# --- one aiohttp request through an ASGI application -------------------------------------------


async def serve_asgi(request: web.Request, asgi: Any) -> web.StreamResponse:
    """Run `asgi` for this request: the body goes in whole, the answer streams out as the
    application sends it. The application sees `http.disconnect` once its answer is complete
    or the client has gone."""
    body = await request.read()
    delivered = False
    finished = asyncio.Event()
    response: web.StreamResponse | None = None

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                key = name.decode("latin-1")
                if key.lower() in ("content-length", "transfer-encoding"):
                    continue
                response.headers.add(key, value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body":
            assert response is not None, "http.response.body before http.response.start"
            chunk = message.get("body", b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()
                finished.set()

    host, port = _peer(request)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "client": (host, port),
        "server": _server(request),
    }
    try:
        await asgi(scope, receive, send)
    finally:
        finished.set()
    if response is None:
        raise ApiError(500, "internal", "the MCP server gave no answer")
    return response


def _peer(request: web.Request) -> tuple[str, int]:
    peer = request.transport.get_extra_info("peername") if request.transport else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return str(peer[0]), int(peer[1])
    return ("", 0)


def _server(request: web.Request) -> tuple[str, int] | None:
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    if isinstance(sock, tuple) and len(sock) >= 2:
        return str(sock[0]), int(sock[1])
    return None
