"""The agent's tools over MCP: `/mcp`, streamable HTTP, the run token as bearer.

The same tools as `POST /api/v1/tools/{name}` (`core.engine.tools.TOOLS`: one implementation, one
JSON schema each), served by the official `mcp` SDK (gateway/mcp/server.py: its low-level `Server`
and its stateless `StreamableHTTPSessionManager`, answering in JSON). The SDK speaks ASGI;
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
from http import HTTPStatus
from typing import Any

from aiohttp import web

from channels.edge.errors import ApiError
from channels.edge.requests import read_body, read_query
from gateway.api.tools import run_of_token

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
        server = await asyncio.to_thread(importlib.import_module, "gateway.mcp.server")
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
    read_query(request, [])
    if request.method == "GET":
        # A stateless server has nothing to send unasked: no standalone SSE stream (MCP lets a
        # server answer 405 here). Held open, each would wait forever for the client to go.
        return jsonrpc_error(
            405,
            "this server sends no server-initiated messages; POST requests to /mcp",
            headers={"Allow": "POST, DELETE"},
        )
    return await serve_asgi(request, await request.app[MCP_KEY].asgi())


def jsonrpc_error(
    status: int, message: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A transport-level error as MCP clients read it: a JSON-RPC error without an id."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return web.json_response(body, status=status, headers=headers)


INVALID_REQUEST = -32600
"""JSON-RPC's code for a request the server cannot take (what the SDK uses for its own)."""


# --- one aiohttp request through an ASGI application -------------------------------------------


async def serve_asgi(request: web.Request, asgi: Any) -> web.StreamResponse:
    """Run `asgi` for this request: the body goes in whole, the answer streams out as the
    application sends it. The application sees `http.disconnect` once its answer is complete
    or the client has gone.

    The SDK answers a few transport errors in plain text (a wrong `Content-Type`, say): an error
    answer that is not JSON is sent as a JSON-RPC error with the same status and the SDK's words.
    A client that leaves mid-answer is not the SDK's failure: further writes are dropped, so the
    SDK finishes its request normally (rather than logging a traceback at ERROR)."""
    body = await read_body(request)
    delivered = False
    finished = asyncio.Event()
    response: web.StreamResponse | None = None
    gone = False
    plain_error: tuple[int, list[bytes]] | None = None  # status, body so far

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def write(chunk: bytes, *, eof: bool) -> None:
        nonlocal gone
        if gone or response is None:
            return
        try:
            if chunk:
                await response.write(chunk)
            if eof:
                await response.write_eof()
        except (ConnectionError, RuntimeError):  # the client went away (or the server is closing)
            gone = True

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal response, plain_error, gone
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", [])
            ]
            content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
            if status >= 400 and not content_type.startswith("application/json"):
                plain_error = (status, [])
                return
            response = web.StreamResponse(status=status)
            for key, value in headers:
                if key.lower() in ("content-length", "transfer-encoding"):
                    continue
                response.headers.add(key, value)
            try:
                await response.prepare(request)
            except (ConnectionError, RuntimeError):
                gone = True
        elif message["type"] == "http.response.body":
            more = bool(message.get("more_body", False))
            if plain_error is not None:
                plain_error[1].append(message.get("body", b""))
                if not more:
                    finished.set()
                return
            assert response is not None, "http.response.body before http.response.start"
            await write(message.get("body", b""), eof=not more)
            if not more:
                finished.set()

    host, port = _peer(request)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("utf-8"),
        "query_string": b"",  # /mcp takes no query parameters (refused before this)
        # The bytes as they came: a header aiohttp decoded to text Latin-1 cannot hold would
        # otherwise fail here, for a header no route reads.
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": (host, port),
        "server": _server(request),
    }
    try:
        await asgi(scope, receive, send)
    finally:
        finished.set()
    if plain_error is not None:
        status, chunks = plain_error
        said = b"".join(chunks).decode("utf-8", "replace").strip()
        return jsonrpc_error(status, said or HTTPStatus(status).phrase)
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
