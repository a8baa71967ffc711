"""The MCP server behind `/mcp` (gateway/mcp/routes.py): the official `mcp` SDK's low-level `Server`
with the agent's tools, and its `StreamableHTTPSessionManager` — stateless and answering in JSON,
so any replica can serve any request and nothing is kept between them.

Each tool is listed as it is declared (`core.engine.tools.base`): its description, its input
schema, its `outputSchema` (the structured content of every successful call holds to it; the
SDK's client checks) and its effects as tool annotations. The server names itself `rolecall`,
with the installed package's version.

This module is imported only when `/mcp` is first needed (gateway/mcp/routes.py says when): the SDK
and the web framework it brings take about a quarter of a fresh gateway's memory.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp.types as types
from aiohttp import web
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from channels.edge.errors import ApiError
from core.engine.tools import TOOLS, Tool, call_tool
from core.model.errors import RolecallError
from gateway.api.tools import run_for_bearer, tools_of

SERVER_NAME = "rolecall"

try:
    SERVER_VERSION = version("rolecall")
except PackageNotFoundError:  # running from a checkout that is not installed
    SERVER_VERSION = "0"

_INSTRUCTIONS = (
    "Tools of one agent run in one conversation of the Rolecall gateway: remember and recall, "
    "say something in this conversation, retract your own message, and create and follow tasks."
)


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=dict(tool.input_schema),
            output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
            annotations=hints_of(tool),
        )
        for tool in TOOLS.values()
    ]


def hints_of(tool: Tool) -> types.ToolAnnotations:
    """The tool's effects as MCP's hints. Every tool acts on the gateway's own conversations,
    memory and tasks only: none reaches an open world."""
    effects = tool.effects
    if effects.read_only:
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return types.ToolAnnotations(
        read_only_hint=False,
        destructive_hint=effects.destructive,
        idempotent_hint=effects.idempotent,
        open_world_hint=False,
    )


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
        version=SERVER_VERSION,
        title="Rolecall",
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


def _authorization(ctx: ServerRequestContext[Any, Any]) -> str:
    """The `Authorization` header of the HTTP request that carried this MCP request (the SDK
    hands it over as a Starlette request)."""
    headers: Mapping[str, str] | None = getattr(ctx.request, "headers", None)
    return headers.get("authorization", "") if headers is not None else ""


async def serve(app: web.Application, ready: asyncio.Future[Any], stop: asyncio.Event) -> None:
    """Run the session manager until `stop` is set; `ready` gets its ASGI application once its
    task group is up. Run it in a task of its own: an anyio task group must be left by the task
    that entered it."""
    manager = StreamableHTTPSessionManager(build_server(app), stateless=True, json_response=True)
    async with manager.run():
        ready.set_result(manager.handle_request)
        await stop.wait()
