"""The acceptable-value rule (`core.model.values`) at every HTTP edge, on SQLite and PostgreSQL.

Each surface a client reaches refuses a lone surrogate, a NUL, a number storage cannot hold and
nesting too deep with 422 in the one error shape, its code saying why and its message naming the
field — before anything reaches storage, so the next valid request on the same gateway works:
API bodies, query strings and path parameters, the widget (anonymous visitors included), the
agent tools over HTTP and MCP, and signed webhook deliveries (whose signature is still checked
first: unsigned is 401 however bad the payload).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.edge import Edge, dumps, edge_gateway  # noqa: F401  (the fixture `edge`)
from tests.api.test_mcp import mcp_client
from tests.webhooks.conftest import new_id, standard_headers

SURROGATE = "\ud800"
NUL = "\x00"

BAD_VALUES: list[tuple[Any, str]] = [
    (SURROGATE, "invalid_unicode"),
    (f"a{NUL}b", "nul_character"),
    (2**63, "invalid_number"),
    (-(2**64), "invalid_number"),
    (float("inf"), "invalid_number"),  # written 1e999 below: JSON has no Infinity
]


def _body_with(value: Any) -> bytes:
    raw = dumps(value)
    return b"1e999" if raw == b"Infinity" else raw


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


async def _thread(edge: Edge) -> str:
    return str((await edge.thread("person:ann", "role:echo"))["id"])


@pytest.mark.parametrize(("value", "code"), BAD_VALUES)
async def test_a_message_text_that_storage_cannot_keep_is_422_naming_the_field(
    edge: Edge, value: Any, code: str
) -> None:
    thread = await _thread(edge)
    body = b'{"author": "person:ann", "text": ' + _body_with(value) + b"}"

    reply = await edge.raw("POST", f"/api/v1/threads/{thread}/messages", body)

    assert "text" in reply.error(422, code)
    await edge.say(thread, "person:ann", "still fine")  # the gateway and its writer are well


async def test_every_kind_of_field_is_checked_deep_inside_objects_too(edge: Edge) -> None:
    thread = await _thread(edge)
    context = b'{"kind": "note", "task": "\\ud800"}'
    body = b'{"author": "person:ann", "text": "hi", "context": ' + context + b"}"
    message = (await edge.raw("POST", f"/api/v1/threads/{thread}/messages", body)).error(
        422, "invalid_unicode"
    )
    assert "context.task" in message

    keyed = dumps({"author": "person:ann", "text": "hi", "context": {"kind\x00": "note"}})
    message = (await edge.raw("POST", f"/api/v1/threads/{thread}/messages", keyed)).error(
        422, "nul_character"
    )
    assert "a key of context" in message

    deep = dumps({"author": "person:ann", "title": "t", "body": "b", "external": _deep(40)})
    assert "external" in (await edge.raw("POST", "/api/v1/tasks", deep)).error(
        422, "too_deeply_nested"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/threads/{thread}%00",
        "/api/v1/threads/%00/timeline",
        "/api/v1/runs/%00",
        "/api/v1/tasks/ab%00cd",
        "/api/v1/persons/%00",
        "/api/v1/endpoints/%00",
        "/api/v1/roles/%00",
    ],
)
async def test_a_nul_in_a_path_parameter_is_422_on_both_backends(edge: Edge, path: str) -> None:
    thread = await _thread(edge)
    reply = await edge.get(path.format(thread=thread))
    assert "path parameter" in reply.error(422, "nul_character")


@pytest.mark.parametrize(
    "query",
    [
        "/api/v1/threads?participant=person:ann%00",
        "/api/v1/threads?participant=person:ann&after=%00",
        "/api/v1/runs?thread=%00",
        "/api/v1/runs?task=%00",
        "/api/v1/runs?role=echo%00",
        "/api/v1/tasks?after=%00",
        "/api/v1/persons?after=%00",
        "/api/v1/events?after%00=1",
    ],
)
async def test_a_nul_in_a_query_parameter_is_422_on_both_backends(edge: Edge, query: str) -> None:
    reply = await edge.get(query)
    assert "query parameter" in reply.error(422, "nul_character")


async def test_a_percent_encoded_surrogate_is_no_lone_surrogate_but_plain_text(edge: Edge) -> None:
    """`%ED%A0%80` is not UTF-8: aiohttp keeps it as written in a path and reads it as U+FFFD in a
    query — valid text either way, so the route answers as for any unknown id."""
    assert (await edge.get("/api/v1/threads/%ED%A0%80")).status == 404
    reply = await edge.get("/api/v1/threads?participant=person:%ED%A0%80")
    reply.error(422, "invalid_address")


async def test_the_widget_refuses_a_bad_visitor_token_and_a_bad_message(edge: Edge) -> None:
    for token in (SURROGATE, NUL):
        body = dumps({"role": "echo", "visitor_token": token})
        reply = await edge.raw("POST", "/widget/v1/sessions", body, token=None)
        assert "visitor_token" in reply.error(422)

    visitor = await edge.visitor()
    for value, code in BAD_VALUES:
        reply = await edge.raw(
            "POST", "/widget/v1/messages", b'{"text": ' + _body_with(value) + b"}",
            headers=visitor, token=None,
        )  # fmt: skip
        assert "text" in reply.error(422, code)
    fine = await edge.raw(
        "POST", "/widget/v1/messages", dumps({"text": "hello"}), headers=visitor, token=None
    )
    assert fine.status == 201, fine.text


@pytest.mark.parametrize(("value", "code"), BAD_VALUES)
async def test_the_tools_over_http_refuse_bad_arguments_naming_them(
    edge: Edge, value: Any, code: str
) -> None:
    _, _, token = await edge.run_token("person:ann")
    payload = b'{"payload": {"note": ' + _body_with(value) + b"}}"
    reply = await edge.raw("POST", "/api/v1/tools/store", payload, token=token)
    assert "payload.note" in reply.error(422, code)

    stored = await edge.raw(
        "POST", "/api/v1/tools/store", dumps({"payload": {"a": 1}}), token=token
    )
    assert stored.status == 200, stored.text


MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}


def _tools_call(arguments: bytes) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        b'"params": {"name": "store", "arguments": ' + arguments + b"}}"
    )


async def test_the_tools_over_mcp_refuse_bad_arguments_with_the_same_error(edge: Edge) -> None:
    """Raw JSON-RPC to `/mcp` (an SDK client would re-encode the values). The SDK's JSON parser
    refuses `\\ud800` escapes itself (a JSON-RPC parse error, 400); what it lets through — a NUL,
    huge integers, `1e999`, deep nesting — `core.engine.tools` refuses, as a tool error carrying our
    error body with the code and the argument's path."""
    _, _, token = await edge.run_token("person:ann")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    surrogate = await edge.raw("POST", "/mcp", _tools_call(b'{"payload": {"note": "\\ud800"}}'),
                               headers=headers, token=None)  # fmt: skip
    assert surrogate.status == 400 and surrogate.body["error"]["code"] == -32700, surrogate.text

    for value, code in [*BAD_VALUES[1:], (_deep(40), "too_deeply_nested")]:
        arguments = b'{"payload": {"note": ' + _body_with(value) + b"}}"
        reply = await edge.raw("POST", "/mcp", _tools_call(arguments), headers=headers, token=None)
        assert reply.status == 200, reply.text
        result = reply.body["result"]
        assert result["isError"] is True, result
        error = result["structuredContent"]["error"]
        assert error["code"] == code and "payload.note" in error["message"], error

    async with mcp_client(edge, token) as client:
        fine = await client.call_tool("store", {"payload": {"note": "ok"}})
        assert not fine.is_error, fine


def _signed(body: bytes) -> dict[str, str]:
    return standard_headers(body, delivery=new_id())


@pytest.mark.parametrize(("value", "code"), BAD_VALUES)
async def test_a_signed_webhook_payload_with_a_bad_value_is_422_and_stores_nothing(
    edge: Edge, value: Any, code: str
) -> None:
    body = b'{"key": "INC-1", "title": ' + _body_with(value) + b"}"

    unsigned = await edge.deliver("tracker", body, {"webhook-id": new_id()})
    unsigned.error(401, "invalid_signature")  # the signature first, the payload after
    reply = await edge.deliver("tracker", body, _signed(body))

    assert "payload.title" in reply.error(422, code)
    assert (await edge.get("/api/v1/tasks")).body["tasks"] == []
    good = json.dumps({"key": "INC-1", "title": "Printer"}).encode()
    assert (await edge.deliver("tracker", good, _signed(good))).status == 200


async def test_a_github_payload_is_checked_whole_not_only_the_fields_it_maps(edge: Edge) -> None:
    from tests.webhooks.conftest import github_headers, issues_event

    event = issues_event("opened") | {"sender": {"login": "x\x00"}}
    body = dumps(event)
    reply = await edge.deliver("gh", body, github_headers(body, event="issues", delivery=new_id()))
    assert "payload.sender.login" in reply.error(422, "nul_character")
