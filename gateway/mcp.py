"""The agent's tools over MCP: `/mcp`, streamable HTTP, the run token as bearer.

The same tools as `POST /api/v1/tools/{name}` (`core.tools.TOOLS`: one implementation, one JSON
schema each), served by the official `mcp` SDK's low-level `Server` and its
`StreamableHTTPSessionManager` — stateless and answering in JSON, so any replica can serve any
request and nothing is kept between them. The SDK speaks ASGI; `serve_asgi` carries one aiohttp
request through it.

The caller is resolved from `Authorization: Bearer <run token>` twice over: before the request
reaches the SDK (a missing, unknown or refused token gets the plain HTTP 401/403 an MCP client
expects, with `WWW-Authenticate`), and again at every tool call (`run_for_bearer`), so a run whose
person is removed mid-session is refused at its next call. A tool's domain error comes back as an
MCP tool error (`isError`) carrying `{"error": {"code", "message"}}` as its structured content —
the same body the HTTP surface answers with.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import mcp.types as types
from aiohttp import web
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from core.errors import RolecallError
from core.tools import TOOLS, call_tool
from gateway.api.tools import run_for_bearer, run_of_token, tools_of
from gateway.errors import ApiError

MCP_PATH = "/mcp"
SERVER_NAME = "rolecall"

MCP_KEY = web.AppKey("mcp", StreamableHTTPSessionManager)

_INSTRUCTIONS = (
    "Tools of one agent run in one conversation of the Rolecall gateway: remember and recall, "
    "say something in this conversation, retract your own message, and create and follow tasks."
)


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name, description=tool.description, input_schema=dict(tool.input_schema)
        )
        for tool in TOOLS.values()
    ]


def build_server(app: web.Application) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            run = await run_for_bearer(app, _authorization(ctx))
            tools = tools_of(app, run)
            result = await call_tool(tools, params.name, dict(params.arguments or {}))
        except (RolecallError, ApiError) as error:
            code = error.code
            body = {"error": {"code": code, "message": error.message}}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"{code}: {error.message}")],
                structured_content=body,
                is_error=True,
            )
        structured = result if isinstance(result, dict) else {"result": result}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result))],
            structured_content=structured,
        )

    return Server(
        SERVER_NAME,
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


def _authorization(ctx: ServerRequestContext[Any, Any]) -> str:
    """The `Authorization` header of the HTTP request that carried this MCP request (the SDK
    hands it over as a Starlette request)."""
    headers: Mapping[str, str] | None = getattr(ctx.request, "headers", None)
    return headers.get("authorization", "") if headers is not None else ""


async def mcp_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """The session manager's task group lives as long as the application, in a task of its own
    (an anyio task group must be left by the task that entered it; aiohttp may start and clean
    up the application from different tasks)."""
    manager = StreamableHTTPSessionManager(build_server(app), stateless=True, json_response=True)
    app[MCP_KEY] = manager
    started = asyncio.Event()
    stop = asyncio.Event()

    async def serve() -> None:
        async with manager.run():
            started.set()
            await stop.wait()

    task = asyncio.create_task(serve(), name="mcp-session-manager")
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiting.cancel()
        task.result()  # it failed to start: raise why
    try:
        yield
    finally:
        stop.set()
        await task


async def handle(request: web.Request) -> web.StreamResponse:
    await run_of_token(request.app, request.headers.get("Authorization", ""))
    return await serve_asgi(request, request.app[MCP_KEY].handle_request)


def add_routes(app: web.Application) -> None:
    app.cleanup_ctx.append(mcp_lifecycle)
    app.router.add_route("*", MCP_PATH, handle)


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
