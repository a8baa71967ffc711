"""Roles nobody serves are refused the same way everywhere: a conversation with one (the operator
API, and so the CLI), a task assigned to one by the operator API or by an agent's tools over HTTP
and MCP — 422 `unknown_role`, naming the roles served — unless the operator allows roles another
deployment serves (`allow_unserved_roles`). An agent's `task_update` with `assignee: null`
unassigns; leaving `assignee` out leaves it as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.api.test_api_tools import _conversation, _tool
from tests.api.test_mcp import _structured, mcp_client
from tests.serving import serve
from tests.settings import make_settings


async def _served(tmp_path: Path, *, allow: bool) -> AsyncIterator[Api]:
    settings = make_settings(tmp_path, allow_unserved_roles=allow)
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO})
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


@pytest.fixture
async def strict(tmp_path: Path) -> AsyncIterator[Api]:
    """A gateway serving `echo` only, with the default rule: other roles are refused."""
    async for api in _served(tmp_path, allow=False):
        yield api


@pytest.fixture
async def lenient(tmp_path: Path) -> AsyncIterator[Api]:
    """A gateway serving `echo` whose operator allows roles served by another deployment."""
    async for api in _served(tmp_path, allow=True):
        yield api


async def test_a_conversation_with_a_role_nobody_serves_is_refused_naming_the_served_roles(
    strict: Api,
) -> None:
    refused = await strict.post("/api/v1/threads", {"participants": ["person:ann", "role:ecko"]})
    message = refused.error(422, "unknown_role")
    assert "'ecko'" in message and "roles served: echo" in message
    assert "ROLECALL_ALLOW_UNSERVED_ROLES" in message
    listed = await strict.get("/api/v1/threads?participant=person:ann")
    assert listed.body["threads"] == []  # nothing was made
    made = await strict.thread("person:ann", "role:echo")
    assert [p["address"] for p in made["participants"]] == ["person:ann", "role:echo"]


async def test_the_operator_may_allow_roles_another_deployment_serves(lenient: Api) -> None:
    thread = await lenient.thread("person:ann", "role:elsewhere")
    assert thread["id"]
    task = await lenient.post(
        "/api/v1/tasks", {"author": "person:ann", "title": "x", "assignee": "elsewhere"}
    )
    assert task.status == 201 and task.body["assignee"] == "elsewhere", task.text


async def test_the_operator_api_refuses_a_task_for_a_role_nobody_serves(strict: Api) -> None:
    create = {"author": "person:ann", "title": "x", "assignee": "nobody"}
    (await strict.post("/api/v1/tasks", create)).error(422, "unknown_role")
    task = await strict.post("/api/v1/tasks", {"author": "person:ann", "title": "x"})
    assert task.status == 201, task.text
    change = {"author": "person:ann", "assignee": "role:nobody"}
    patched = await strict.call("PATCH", f"/api/v1/tasks/{task.body['id']}", json=change)
    patched.error(422, "unknown_role")


async def test_the_task_tools_over_http_refuse_a_role_nobody_serves(strict: Api) -> None:
    _, _, token = await _conversation(strict, "person:ann")
    refused = await _tool(strict, token, "task_create", {"title": "x", "assignee": "nobody"})
    assert "roles served: echo" in refused.error(422, "unknown_role")
    task = (await _tool(strict, token, "task_create", {"title": "x", "assignee": "echo"})).body
    task_id = task["result"]["id"]
    (await _tool(strict, token, "task_update", {"task_id": task_id, "assignee": "nobody"})).error(
        422, "unknown_role"
    )
    kept = await _tool(strict, token, "task_update", {"task_id": task_id, "status": "done"})
    assert kept.body["result"]["assignee"] == "echo", kept.text
    cleared = await _tool(strict, token, "task_update", {"task_id": task_id, "assignee": None})
    assert cleared.status == 200, cleared.text
    assert cleared.body["result"]["assignee"] is None and cleared.body["result"]["changed"]


async def test_the_task_tools_over_mcp_refuse_a_role_nobody_serves(strict: Api) -> None:
    _, _, token = await _conversation(strict, "person:ann")
    async with mcp_client(strict, token) as client:
        refused = await client.call_tool("task_create", {"title": "x", "assignee": "nobody"})
        assert refused.is_error
        assert _structured(refused)["error"]["code"] == "unknown_role"
        made = await client.call_tool("task_create", {"title": "x"})
        task_id = _structured(made)["id"]
        update = {"task_id": task_id, "assignee": "role:nobody"}
        refused = await client.call_tool("task_update", update)
        assert refused.is_error
        assert _structured(refused)["error"]["code"] == "unknown_role"
    task = (await strict.get(f"/api/v1/tasks/{task_id}")).body
    assert task["assignee"] is None
