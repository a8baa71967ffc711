"""`/mcp`'s transport errors are JSON-RPC (or our JSON) errors, never a 5xx, never an ERROR log.

Over raw HTTP with a valid run token: JSON that does not parse, a wrong `Content-Type`, an
`Accept` without JSON, a session id the stateless server has never given (ignored: each request
stands alone), header bytes Latin-1 cannot carry, a GET for a standalone stream (405: a
stateless server sends nothing unasked), a query parameter (422 `unknown_parameter`), and a
client that hangs up mid-request (nothing is logged at ERROR).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import Reply
from tests.api.edge import Edge, edge_gateway  # noqa: F401  (the fixture `edge`)
from tests.api.test_hostile_input import MCP_HEADERS, _tools_call
from tests.waiting import eventually

INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}'
)


@pytest.fixture
def no_errors_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [(r.name, r.getMessage()) for r in errors]


def _jsonrpc_error(reply: Reply, status: int) -> dict[str, Any]:
    assert reply.status == status, reply.text
    assert reply.headers["Content-Type"].startswith("application/json"), reply.headers
    body = reply.body
    assert body["jsonrpc"] == "2.0" and set(body["error"]) >= {"code", "message"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error


async def test_transport_errors_are_jsonrpc_errors(edge: Edge, no_errors_logged: None) -> None:
    _, _, token = await edge.run_token("person:ann")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}

    async def mcp(method: str, body: bytes | None, **changed: str) -> Reply:
        return await edge.raw(method, "/mcp", body, headers={**headers, **changed}, token=None)

    assert _jsonrpc_error(await mcp("POST", b"{not json"), 400)["code"] == -32700
    assert _jsonrpc_error(await mcp("POST", b"\xff\xfe"), 400)["code"] == -32700
    assert _jsonrpc_error(await mcp("POST", b"[1, 2]"), 400)["code"] < 0
    wrong_type = _jsonrpc_error(
        await mcp("POST", INITIALIZE, **{"Content-Type": "text/plain"}), 400
    )
    assert "Content-Type" in wrong_type["message"]
    _jsonrpc_error(await mcp("POST", INITIALIZE, Accept="text/html"), 406)
    got = await mcp("GET", None)
    _jsonrpc_error(got, 405)
    assert "POST" in got.headers["Allow"]
    _jsonrpc_error(await mcp("DELETE", None), 405)

    for session in ("bogus", "0" * 200):
        reply = await mcp("POST", INITIALIZE, **{"Mcp-Session-Id": session})
        assert reply.status == 200 and "result" in reply.body, reply.text

    query = await edge.raw("POST", "/mcp?x=1", INITIALIZE, headers=headers, token=None)
    query.error(422, "unknown_parameter")


async def test_header_bytes_latin1_cannot_carry_are_no_500(
    edge: Edge, no_errors_logged: None
) -> None:
    _, _, token = await edge.run_token("person:ann")
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Type: application/json\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        f"X-Note: caf\u00e9 \u20ac\r\nContent-Length: {len(INITIALIZE)}\r\n\r\n"
    ).encode()
    reader, writer = await asyncio.open_connection(edge.server.host, edge.server.port)
    try:
        writer.write(head + INITIALIZE)
        await writer.drain()
        async with asyncio.timeout(10):
            status_line = await reader.readline()
    finally:
        writer.close()
    assert status_line.split()[1] == b"200", status_line


async def test_a_client_that_hangs_up_mid_request_harms_nothing(
    edge: Edge, caplog: pytest.LogCaptureFixture, no_errors_logged: None
) -> None:
    """The client sends its headers and most of the body, then leaves: the handler, started on
    the headers, finds the body cut off — a 400 nobody reads, one INFO line, no traceback at
    ERROR — and the gateway serves on, the same call working for the next client."""
    _, _, token = await edge.run_token("person:ann")
    call = _tools_call(b'{"payload": {"note": "cut off"}}')
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Type: application/json\r\nMCP-Protocol-Version: 2025-06-18\r\n"
        f"Content-Length: {len(call)}\r\n\r\n"
    ).encode()
    for _ in range(3):
        _, writer = await asyncio.open_connection(edge.server.host, edge.server.port)
        writer.write(head + call[:-5])
        await writer.drain()
        writer.close()  # gone before the body is complete
        await writer.wait_closed()

    def statuses() -> list[int]:
        return [
            r.fields["status"]  # type: ignore[attr-defined]
            for r in caplog.records
            if r.name == "rolecall.access" and getattr(r, "fields", {}).get("path") == "/mcp"
        ]

    async def all_ended() -> list[int] | None:
        return statuses() if len(statuses()) == 3 else None

    assert await eventually(all_ended) == [400, 400, 400]
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    reply = await edge.raw("POST", "/mcp", call, headers=headers, token=None)
    assert reply.status == 200 and reply.body["result"]["isError"] is False, reply.text
