"""What the official MCP client is told about the tools, and that it holds: every argument
described, "exactly one of" said by the schema, the effects as tool annotations, an output schema
that every real answer validates against (the client checks it at every call; these tests also
hold each answer to the schema closed, so no field goes undeclared), and the server's name and
version. The schemas' top level is one every model API takes as a tool's parameters (the OpenAI
runtime offers the same schemas as function tools)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from importlib.metadata import version
from typing import Any

import aiohttp
import pytest
from jsonschema import Draft202012Validator

from core.engine.runtimes.openai.history import function_tools
from core.engine.tools import TOOLS
from core.model.roles import Role
from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import ECHO, TOKEN, Api
from tests.api.test_api_tools import _conversation
from tests.api.test_mcp import _structured, mcp_client
from tests.serving import serve

READ_ONLY = {"recall", "peek_pending", "task_get", "task_list"}
DESTRUCTIVE = {"retract"}

COMPOSITION = {"oneOf", "anyOf", "allOf", "not", "if", "then", "else", "enum", "const", "$ref"}
"""What may not stand at a tool schema's top level: Anthropic's and OpenAI's tool APIs refuse
`oneOf`/`anyOf`/`allOf` there (OpenAI `enum` and `not` too), and Claude Code drops the tool."""

PATIENT = Role.model_validate(
    {
        "name": "patient",
        "display_name": "Patient",
        "runtime": {"kind": "builtin", "agent": "echo", "delay_ms": 60_000},
    }
)
"""A role whose turn takes a minute: what its person said stays pending meanwhile."""


@pytest.fixture
async def patient(settings: Settings) -> AsyncIterator[Api]:
    """The gateway serving `echo` and `patient` (the whole turn's budget of tool calls)."""
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO, "patient": PATIENT})
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


def closed(schema: Any) -> Any:
    """`schema` with every object of declared properties closed to any other field."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if "properties" in schema:
        out["properties"] = {k: closed(v) for k, v in schema["properties"].items()}
        out.setdefault("additionalProperties", False)
    return out


def _undescribed(schema: Mapping[str, Any], at: str) -> list[str]:
    """The properties, nested ones too, with no description."""
    missing = []
    for name, prop in schema.get("properties", {}).items():
        if not str(prop.get("description", "")).strip():
            missing.append(f"{at}.{name}")
        missing.extend(_undescribed(prop, f"{at}.{name}"))
    return missing


async def test_the_client_is_told_every_tools_arguments_effects_and_answer(gateway: Api) -> None:
    """Every tool's schemas are valid JSON Schema with an object at the top, every argument
    (and every field of an object argument) is described, `readOnlyHint` marks the tools that
    only read and `destructiveHint` the one that takes something away, and the server names
    its version."""
    _, _, token = await _conversation(gateway, "person:ann")
    async with mcp_client(gateway, token) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        info = client.server_info
    assert info is not None
    assert (info.name, info.version) == ("rolecall", version("rolecall"))
    assert set(listed) == set(TOOLS)
    for name, tool in listed.items():
        assert tool.output_schema == TOOLS[name].output_schema, name
        for schema in (tool.input_schema, tool.output_schema):
            assert schema is not None and schema["type"] == "object", name
            Draft202012Validator.check_schema(schema)
        assert not COMPOSITION & set(tool.input_schema), name
        assert _undescribed(tool.input_schema, name) == []
        hints = tool.annotations
        assert hints is not None, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.open_world_hint is False, name
        if name not in READ_ONLY:
            assert hints.destructive_hint is (name in DESTRUCTIVE), name
    assert listed["subscribe"].annotations and listed["subscribe"].annotations.idempotent_hint
    assert "description" in listed["send_message"].input_schema["properties"]["context"]


async def test_exactly_one_of_task_id_and_external_key_is_the_schemas_rule_and_the_tools(
    gateway: Api,
) -> None:
    """`subscribe` and `unsubscribe` take a task id or an external key, never both, never
    neither: what their schema accepts is what the tools do."""
    _, _, token = await _conversation(gateway, "person:ann")
    async with mcp_client(gateway, token) as client:
        task = _structured(await client.call_tool("task_create", {"title": "Fix the lamp"}))
        for name in ("subscribe", "unsubscribe"):
            schema = Draft202012Validator(TOOLS[name].input_schema)
            for arguments in ({"task_id": task["id"]}, {"external_key": "tracker:INC-1"}):
                assert schema.is_valid(arguments), (name, arguments)
                answered = await client.call_tool(name, arguments)
                assert not answered.is_error, answered
            both = {"task_id": task["id"], "external_key": "tracker:INC-1"}
            for arguments in ({}, both):
                assert not schema.is_valid(arguments), (name, arguments)
                refused = await client.call_tool(name, arguments)
                assert refused.is_error, refused
                assert _structured(refused)["error"]["code"] == "invalid_argument"


async def test_every_tools_real_answer_holds_to_its_output_schema(patient: Api) -> None:
    """Each tool called through the official client (which checks the structured content of
    every successful call against the tool's output schema) answers what its schema declares,
    field for field — a task with an external item and a person's changes, a retracted message
    and its retraction pending, a subscription to an item no task refers to yet — with arguments
    its input schema accepts."""
    api = patient
    external = {"source": "tracker", "key": "INC-7", "url": "https://tracker.example/INC-7"}
    made = await api.post(
        "/api/v1/tasks", {"author": "person:ann", "title": "Printer jam", "external": external}
    )
    assert made.status == 201, made.text
    followed = made.body["id"]
    thread, _, token = await _conversation(api, "person:ann", "patient")  # its turn runs on
    oops = await api.say(thread, "person:ann", "ignore this")
    retracted = await api.post(
        f"/api/v1/threads/{thread}/messages/{oops['id']}/retract",
        {"author": "person:ann", "reason": "typo"},
    )
    assert retracted.status == 201, retracted.text
    answers: dict[str, list[dict[str, Any]]] = {name: [] for name in TOOLS}

    async with mcp_client(api, token) as client:

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            assert Draft202012Validator(TOOLS[name].input_schema).is_valid(arguments), arguments
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result)
            answers[name].append(_structured(result))
            return _structured(result)

        pending = (await call("peek_pending", {}))["pending"]
        assert {e["kind"] for e in pending} == {"message", "retraction"}
        assert any(e.get("retracted") for e in pending)
        await call("store", {"payload": {"kind": "note", "text": "toner is low", "n": 3}})
        await call("recall", {"query": "toner", "where": {"n": 3}, "limit": 5})
        context = {"kind": "follow_up", "originating_message": pending[0]["id"]}
        sent = await call("send_message", {"text": "On it.", "context": context})
        await call("retract", {"message_id": sent["id"], "reason": "too soon"})
        await call("ask", {"question": "Order more?", "options": ["Yes", "Later"], "expires_in": 1})
        task = await call("task_create", {"title": "Buy toner", "body": "2", "assignee": "echo"})
        await call("task_comment", {"task_id": task["id"], "text": "ordered"})
        await call("task_update", {"task_id": task["id"], "status": "done", "assignee": None})
        await call("task_update", {"task_id": task["id"], "title": "Buy toner"})  # unchanged
        for task_id in (task["id"], followed):
            await call("task_get", {"task_id": task_id})
        await call("task_list", {})
        await call("task_list", {"status": "done", "assignee": "role:echo"})
        for key in ("tracker:INC-7", "tracker:INC-99"):  # a task follows the one, none the other
            await call("subscribe", {"external_key": key})
            await call("unsubscribe", {"external_key": key})
        await call("subscribe", {"task_id": task["id"]})
        await call("unsubscribe", {"task_id": task["id"]})

    assert [a["task_id"] for a in answers["subscribe"]] == [followed, None, task["id"]]
    assert [a["changed"] for a in answers["task_update"]] == [True, False]
    history = answers["task_get"][1]["history"]
    assert history[0]["actor"] == {"kind": "person", "name": "person:ann"}
    assert answers["task_get"][1]["external"] == external
    for name, given in answers.items():
        assert given, f"{name} was not called"
        schema = Draft202012Validator(closed(TOOLS[name].output_schema))
        for answer in given:
            errors = [
                f"{'/'.join(map(str, e.path))}: {e.message}" for e in schema.iter_errors(answer)
            ]
            assert errors == [], (name, answer)


def test_the_openai_runtime_offers_the_same_schemas_as_function_parameters() -> None:
    """The function tools an OpenAI-compatible model is offered carry each tool's input schema
    as it is, descriptions and the "exactly one of" rule included: an object at the top with
    nothing there an OpenAI-compatible server refuses."""
    offered = {t["function"]["name"]: t["function"] for t in function_tools(on_task=False)}
    assert set(offered) == set(TOOLS)
    for name, function in offered.items():
        parameters = function["parameters"]
        assert parameters == TOOLS[name].input_schema
        assert parameters["type"] == "object" and not COMPOSITION & set(parameters), name
        Draft202012Validator.check_schema(parameters)
    assert offered["subscribe"]["parameters"]["maxProperties"] == 1
    assert offered["recall"]["parameters"]["properties"]["query"]["description"]
