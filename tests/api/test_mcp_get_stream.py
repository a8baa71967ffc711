"""An MCP client that opens the optional GET stream of `/mcp` and closes it leaves nothing in the
log at ERROR and no traceback: a client going away is not an error.

The MCP Inspector (the TypeScript SDK's streamable HTTP client) opens that stream right after
`notifications/initialized`, sending the session id it holds, and drops it when it disconnects;
the Python SDK's client opens it whenever it holds a session id. The gateway's server is
stateless: it sends nothing unasked, so the GET is answered at once (405, `Allow: POST, DELETE`,
a JSON-RPC error MCP clients take as "no stream here"), before the request reaches the SDK. Over
real HTTP on 127.0.0.1, against the gateway served as `rolecall serve` serves it (handlers run on
when a client leaves), with every logger captured from DEBUG up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import aiohttp
import pytest

from tests.api.edge import Edge, edge_gateway  # noqa: F401  (the fixture `edge`)
from tests.api.test_hostile_input import MCP_HEADERS
from tests.waiting import eventually

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "inspector-like", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
SESSION_ID = "4f1c0d9e-inspector-held-session"
"""The session id such a client sends with its GET (a stateless server gives none; a client that
had one from elsewhere, or a proxy in between, sends it all the same)."""


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record of every logger, from DEBUG up; after the test, none at ERROR or above and
    none carrying a traceback."""
    caplog.set_level(logging.DEBUG)
    yield caplog
    bad = [
        (r.name, r.levelname, r.getMessage())
        for r in caplog.records
        if r.levelno >= logging.ERROR
        or r.exc_info is not None
        or r.exc_text
        or "Traceback" in r.getMessage()
    ]
    assert not bad, bad


def _mcp_accesses(caplog: pytest.LogCaptureFixture, method: str) -> list[int]:
    """The statuses of the access-log lines of `method /mcp`, in order."""
    return [
        r.fields["status"]  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "rolecall.access"
        and getattr(r, "fields", {}).get("path") == "/mcp"
        and r.fields["method"] == method  # type: ignore[attr-defined]
    ]


async def test_opening_and_closing_the_get_stream_logs_no_error(
    edge: Edge, log: pytest.LogCaptureFixture
) -> None:
    """The Inspector's session, step by step: initialize, initialized, the GET stream opened
    with the session id and closed by the client, the session ended (DELETE), and a later
    request served as usual; the GET is 405 with `Allow`, and nothing is logged at ERROR."""
    _, _, token = await edge.run_token("person:ann")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    url = edge.server.make_url("/mcp")
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json=INITIALIZE, headers=headers) as answer:
            assert answer.status == 200, await answer.text()
            assert (await answer.json())["result"]["serverInfo"]["name"] == "rolecall"
        async with http.post(url, json=INITIALIZED, headers=headers) as answer:
            assert answer.status == 202, await answer.text()

        stream_headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "text/event-stream",
            "Mcp-Session-Id": SESSION_ID,
            "MCP-Protocol-Version": "2025-06-18",
        }
        for _ in range(3):  # a client that retries the stream gets the same answer each time
            stream = await http.get(url, headers=stream_headers)
            assert stream.status == 405
            assert "POST" in stream.headers["Allow"]
            error = (await stream.json())["error"]
            assert error["code"] == -32600 and error["message"], error
            stream.close()  # the client drops the stream, connection and all

        ended = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": SESSION_ID}
        async with http.delete(url, headers=ended) as answer:
            assert answer.status == 405, await answer.text()

        async with http.post(url, json=LIST_TOOLS, headers=headers) as answer:
            assert answer.status == 200, await answer.text()
            assert (await answer.json())["result"]["tools"]

    assert _mcp_accesses(log, "GET") == [405, 405, 405]


async def test_a_get_stream_whose_client_leaves_before_the_answer_logs_no_error(
    edge: Edge, log: pytest.LogCaptureFixture
) -> None:
    """A client asks for the stream and hangs up without reading a byte (a tab closed, the
    Inspector disconnecting at once): each request still ends with its one access line, the
    gateway logs nothing at ERROR, and the next client's stream request is answered alike."""
    _, _, token = await edge.run_token("person:ann")
    request = (
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {SESSION_ID}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n"
    ).encode()
    for _ in range(3):
        _, writer = await asyncio.open_connection(edge.server.host, edge.server.port)
        writer.write(request)
        await writer.drain()
        writer.close()  # gone before the answer
        await writer.wait_closed()

    async def all_answered() -> list[int] | None:
        statuses = _mcp_accesses(log, "GET")
        return statuses if len(statuses) == 3 else None

    assert await eventually(all_answered) == [405, 405, 405]
    reader, writer = await asyncio.open_connection(edge.server.host, edge.server.port)
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(10):
            status_line = await reader.readline()
    finally:
        writer.close()
    assert status_line.split()[1] == b"405", status_line
