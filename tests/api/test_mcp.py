"""The agent tools over MCP at `/mcp`: the official `mcp` SDK's client connects over real HTTP
with a run token, lists the same tools with the same schemas as the HTTP surface, stores and
recalls, and sends a message that then appears on the timeline. The token is checked at every
call, as over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from core.engine.runtimes.base import Prompt, Reply, Runtime, TurnTools, Update
from core.engine.runtimes.builtin.agent import BuiltinAgent, BuiltinRuntime
from core.engine.runtimes.registry import Runtimes
from core.engine.tools import TOOLS
from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import TOKEN, Api
from tests.api.test_api_tools import _conversation
from tests.serving import free_port, serve
from tests.settings import make_settings
from tests.waiting import eventually


@asynccontextmanager
async def mcp_client(api: Api, token: str) -> AsyncIterator[Client]:
    url = str(api.server.make_url("/mcp"))
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _structured(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result
    structured: dict[str, Any] = result.structured_content
    return structured


async def test_an_mcp_client_lists_the_tools_with_their_schemas(gateway: Api) -> None:
    _, _, token = await _conversation(gateway, "person:ann")
    async with mcp_client(gateway, token) as client:
        listed = await client.list_tools()
    by_name = {tool.name: tool for tool in listed.tools}
    assert set(by_name) == set(TOOLS)
    for name, tool in TOOLS.items():
        assert by_name[name].input_schema == dict(tool.input_schema)
        assert by_name[name].description == tool.description
        assert "thread" not in tool.description.lower()


async def test_store_recall_and_send_over_mcp(gateway: Api) -> None:
    thread, _, ann = await _conversation(gateway, "person:ann")
    _, _, bob = await _conversation(gateway, "person:bob")
    async with mcp_client(gateway, ann) as client:
        stored = await client.call_tool("store", {"payload": {"kind": "note", "text": "green tea"}})
        assert not stored.is_error, stored
        assert _structured(stored)["shared"] is False
        recalled = _structured(await client.call_tool("recall", {"query": "tea"}))
        assert [e["payload"]["text"] for e in recalled["entries"]] == ["green tea"]
        sent = await client.call_tool("send_message", {"text": "Noted: green tea."})
        assert not sent.is_error, sent
        message_id = _structured(sent)["id"]
    async with mcp_client(gateway, bob) as client:
        theirs = _structured(await client.call_tool("recall", {"query": "tea"}))
        assert theirs["entries"] == []

    page = await gateway.timeline(thread, "?as=person:ann&latest=true&limit=1")
    [event] = page["events"]
    assert event["id"] == message_id
    assert event["author"] == "role:echo" and event["text"] == "Noted: green tea."


async def test_tool_errors_come_back_as_tool_errors_with_the_http_error_body(gateway: Api) -> None:
    _, _, token = await _conversation(gateway, "person:ann")
    async with mcp_client(gateway, token) as client:
        missing = await client.call_tool("task_get", {})
        assert missing.is_error
        assert _structured(missing)["error"]["code"] == "missing_argument"
        unknown = await client.call_tool("no_such_tool", {})
        assert unknown.is_error
        assert _structured(unknown)["error"]["code"] == "tool_not_found"
        not_found = await client.call_tool("task_get", {"task_id": "tsk_nothing"})
        assert not_found.is_error and "error" in _structured(not_found)


async def test_a_removed_persons_run_is_refused_at_its_next_mcp_call(gateway: Api) -> None:
    thread, _, token = await _conversation(gateway, "person:ann")
    async with mcp_client(gateway, token) as client:
        assert not (await client.call_tool("store", {"payload": {"n": 1}})).is_error
        await gateway.set_state(thread, "person:ann", "removed")
        refused = await client.call_tool("store", {"payload": {"n": 2}})
    assert refused.is_error
    assert _structured(refused)["error"]["code"] == "person_removed"


async def test_the_endpoint_refuses_missing_and_unknown_tokens_over_plain_http(
    gateway: Api,
) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for token in (None, "rct_not-a-token"):
        reply = await gateway.post("/mcp", initialize, token=token)
        reply.error(401)
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    # the operator's token is not a run token
    (await gateway.post("/mcp", initialize)).error(401, "invalid_run_token")


# --- a runtime whose agent lives outside the gateway's process --------------------------------


class _OverMcp(BuiltinAgent):
    """An agent that, like a remote one, reaches its tools only over MCP with the token its
    session was started with: it stores each person message and says what it stored."""

    name = "over-mcp"
    tokens_given: list[str] = []
    """Every token a session of this agent was handed, in order (across sessions)."""

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        access = self.spec.tools
        assert access is not None, "a runtime that wants tools is handed them at session start"
        if access.token not in _OverMcp.tokens_given:
            _OverMcp.tokens_given.append(access.token)
        said = [e.text or "" for e in prompt.news if e.kind == "message" and e.text]
        headers = {"Authorization": f"Bearer {access.token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(access.mcp_url, http_client=http)) as client,
        ):
            for text in said:
                stored = await client.call_tool("store", {"payload": {"said": text}})
                assert not stored.is_error, stored
            recalled = await client.call_tool("recall", {"query": ""})
        count = len(_structured(recalled)["entries"])
        yield Reply(f"stored over MCP; {count} remembered")


class _OutOfProcess(BuiltinRuntime):
    wants_tools = True


class _Runtimes(Runtimes):
    def __init__(self) -> None:
        super().__init__({"over-mcp": _OverMcp})
        self.runtime = _OutOfProcess({"over-mcp": _OverMcp})

    def for_role(self, role: Role) -> Runtime:
        return self.runtime


@asynccontextmanager
async def _remote_gateway(tmp_path: Path, **role: Any) -> AsyncIterator[Api]:
    """A gateway whose one role, `remote`, is backed by `_OverMcp` in a runtime that wants tools."""
    port = free_port()
    settings = make_settings(tmp_path, port=port)
    remote = Role.model_validate(
        {
            "name": "remote",
            "display_name": "Remote",
            "runtime": {"kind": "builtin", "agent": "over-mcp"},
            **role,
        }
    )
    app = build_app(settings, api_token=TOKEN, roles={"remote": remote}, runtimes=_Runtimes())
    async with serve(app, port=port) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


async def _replies(api: Api, thread: str, count: int) -> list[str]:
    async def replies() -> list[str] | None:
        page = await api.timeline(thread, "?as=person:ann")
        said = [e["text"] for e in page["events"] if e.get("author") == "role:remote"]
        return said if len(said) >= count else None

    return await eventually(replies, what=f"{count} replies by role:remote", within=20)


async def test_a_runtime_that_wants_tools_gets_its_runs_token_at_session_start(
    tmp_path: Path,
) -> None:
    async with _remote_gateway(tmp_path) as api:
        thread = (await api.thread("person:ann", "role:remote"))["id"]
        await api.say(thread, "person:ann", "my locker is 42")
        assert await _replies(api, thread, 1) == ["stored over MCP; 1 remembered"]
        [run] = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        assert run["status"] != "failed", run


async def test_a_sessions_token_is_revoked_when_the_session_sleeps_and_the_next_gets_a_new_one(
    tmp_path: Path,
) -> None:
    _OverMcp.tokens_given.clear()
    async with _remote_gateway(tmp_path, idle_sleep_after=0.3) as api:
        thread = (await api.thread("person:ann", "role:remote"))["id"]
        await api.say(thread, "person:ann", "my locker is 42")
        assert await _replies(api, thread, 1) == ["stored over MCP; 1 remembered"]
        [first] = _OverMcp.tokens_given  # it worked: the agent stored over MCP with it
        [run] = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        operators = (await api.post(f"/api/v1/runs/{run['id']}/token")).body["token"]

        async def refused() -> bool:
            return (await api.post("/api/v1/tools/recall", {}, token=first)).status == 401

        # the session sleeps 0.3 s after its turn
        await eventually(refused, what="the slept session's token refused")
        (await api.post("/api/v1/tools/recall", {}, token=first)).error(401, "invalid_run_token")
        # an operator's token is no session's: it stays
        assert (await api.post("/api/v1/tools/recall", {}, token=operators)).status == 200

        await api.say(thread, "person:ann", "and my desk is 7")  # wakes a new session
        assert (await _replies(api, thread, 2))[1] == "stored over MCP; 2 remembered"
        assert len(_OverMcp.tokens_given) == 2
        assert _OverMcp.tokens_given[1] != first
        assert await refused()
