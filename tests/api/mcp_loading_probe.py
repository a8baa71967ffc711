"""Run by tests/api/test_mcp_loading.py in a process of its own (so that no other test has
imported the MCP SDK): start a gateway, say whether the SDK's server side is loaded, call `/mcp`
once with a run token an operator minted, say again. Prints one JSON object.

    python -m tests.api.mcp_loading_probe DIR builtin|wants-tools
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp

from core.engine.runtimes.builtin import AGENTS, BuiltinRuntime
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from gateway.app import build_app
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually

TOKEN = "probe-operator-token-0123456789"
SERVER_SIDE = ("gateway.mcp.server", "mcp.server.streamable_http_manager")


class _WantsTools(BuiltinRuntime):
    wants_tools = True


class _Remote(Runtimes):
    """The built-in echo, in a runtime that says its agents reach their tools over MCP."""

    def __init__(self) -> None:
        super().__init__()
        self.runtime = _WantsTools(AGENTS)

    def for_role(self, role: Role) -> BuiltinRuntime:
        return self.runtime


def loaded() -> bool:
    return all(name in sys.modules for name in SERVER_SIDE)


async def probe(directory: Path, mode: str) -> dict[str, object]:
    settings = make_settings(directory)
    echo = Role.model_validate(
        {"name": "echo", "display_name": "Echo", "runtime": {"kind": "builtin", "agent": "echo"}}
    )
    runtimes = _Remote() if mode == "wants-tools" else None
    app = build_app(settings, api_token=TOKEN, roles={"echo": echo}, runtimes=runtimes)
    async with (
        serve(app) as server,
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
    ):
        seen: dict[str, object] = {"at_start": loaded()}
        url = server.make_url
        async with http.post(
            url("/api/v1/threads"), json={"participants": ["person:ann", "role:echo"]}
        ) as r:
            thread = (await r.json())["id"]
        await http.post(
            url(f"/api/v1/threads/{thread}/messages"),
            json={"author": "person:ann", "text": "hi"},
        )

        async def runs_of_thread() -> list[dict[str, str]]:
            async with http.get(url(f"/api/v1/runs?thread={thread}")) as r:
                runs: list[dict[str, str]] = (await r.json())["runs"]
                return runs

        runs = await eventually(runs_of_thread, what="the run of ann's conversation")
        async with http.post(url(f"/api/v1/runs/{runs[0]['id']}/token")) as r:
            token = (await r.json())["token"]
        seen["before_call"] = loaded()
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        }
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        }
        async with http.post(url("/mcp"), json=initialize, headers=headers) as r:
            seen["status"] = r.status
            seen["server_name"] = (await r.json())["result"]["serverInfo"]["name"]
        seen["after_call"] = loaded()
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(Path(sys.argv[1]), sys.argv[2]))))
