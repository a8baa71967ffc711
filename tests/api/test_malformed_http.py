"""Malformed HTTP gets the gateway's JSON error shape, with the right status, and no traceback.

Bodies: a `Content-Encoding` the body is not in is 400 `invalid_encoding` (aiohttp's decoder
used to make it a 500), a coding the gateway does not decode is 415 `unsupported_encoding`, a
compressed body that decodes past the limit is 413 — and gzip and deflate bodies that are what
they say work, on both backends. Requests aiohttp's parser refuses before any route sees them (a
request line that is not HTTP, an oversized header, too many headers, broken chunked framing)
are answered by `gateway.malformed` in JSON too: 400 `malformed_request` or 431
`headers_too_large`. None of it writes an ERROR line to the log. These go over a raw socket, so
the bytes are exactly the ones written here.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import logging
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.malformed import classify
from tests.api.conftest import TOKEN
from tests.api.edge import Edge, dumps, edge_gateway  # noqa: F401  (the fixture `edge`)
from tests.waiting import eventually


async def exchange(edge: Edge, data: bytes) -> tuple[int, dict[str, str], Any]:
    """Write `data` on a new connection; the status, headers and JSON body of the answer."""
    reader, writer = await asyncio.open_connection(edge.server.host, edge.server.port)
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(10):
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in lines[1:] if line)
            }
            body = await reader.readexactly(int(headers["content-length"]))
    finally:
        writer.close()
    return status, headers, json.loads(body)


def _error(answer: tuple[int, dict[str, str], Any], status: int, code: str) -> str:
    got, headers, body = answer
    assert got == status, body
    assert headers["content-type"].startswith("application/json"), headers
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    return message


@pytest.fixture
def no_errors_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.INFO)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


def _message(text: str = "hello") -> bytes:
    return dumps({"author": "person:ann", "text": text})


async def test_gzip_and_deflate_bodies_that_are_what_they_say_work(edge: Edge) -> None:
    thread = (await edge.thread("person:ann", "role:echo"))["id"]
    path = f"/api/v1/threads/{thread}/messages"
    for coding, packed in [("gzip", gzip.compress(_message("zipped"))),
                           ("deflate", zlib.compress(_message("deflated")))]:  # fmt: skip
        reply = await edge.raw("POST", path, packed, headers={"Content-Encoding": coding})
        assert reply.status == 201, reply.text

    async def answered() -> list[str] | None:
        page = await edge.timeline(thread)
        texts = [e["text"] for e in page["events"] if e["kind"] == "message"]
        return texts if len(texts) == 4 else None  # both said, both echoed

    assert sorted(await eventually(answered)) == ["deflated", "deflated", "zipped", "zipped"]


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", b"hello"),
        ("gzip", gzip.compress(b'{"author": "person:ann", "text": "cut"}')[:-6]),  # truncated
        ("gzip", gzip.compress(b"{}") + b"trailing"),
        ("deflate", b"hello"),
        ("x-gzip", b"\x1f\x8b\x08\x00garbage"),
    ],
)
async def test_a_body_that_is_not_its_content_encoding_is_400(
    edge: Edge, no_errors_logged: None, coding: str, body: bytes
) -> None:
    thread = (await edge.thread("person:ann", "role:echo"))["id"]
    reply = await edge.raw(
        "POST", f"/api/v1/threads/{thread}/messages", body, headers={"Content-Encoding": coding}
    )
    assert coding in reply.error(400, "invalid_encoding")


@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "gzip, gzip", "whatever"])
async def test_a_content_encoding_the_gateway_does_not_decode_is_415(
    edge: Edge, no_errors_logged: None, coding: str
) -> None:
    for path in ("/api/v1/threads", "/widget/v1/sessions", "/hooks/tracker", "/api/v1/roles"):
        method = "GET" if path == "/api/v1/roles" else "POST"
        reply = await edge.raw(method, path, b"{}", headers={"Content-Encoding": coding})
        reply.error(415, "unsupported_encoding")


async def test_a_compressed_body_that_decodes_past_the_limit_is_413(
    edge: Edge, no_errors_logged: None
) -> None:
    bomb = gzip.compress(b'{"participants": ["' + b"a" * 3_000_000 + b'"]}')
    assert len(bomb) < 10_000
    reply = await edge.raw("POST", "/api/v1/threads", bomb, headers={"Content-Encoding": "gzip"})
    assert "decoded" in reply.error(413, "body_too_large")

    big = io.BytesIO(b'{"x": "' + b"a" * 1_100_000 + b'"}')
    plain = await edge.raw("POST", "/api/v1/threads", big)
    plain.error(413, "body_too_large")


def _request(path: str, *lines: str, body: bytes = b"") -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {TOKEN}", *lines]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def test_what_aiohttp_cannot_parse_is_answered_in_json(
    edge: Edge, no_errors_logged: None
) -> None:
    cases: list[tuple[bytes, int, str]] = [
        (b"GARBAGE\r\n\r\n", 400, "malformed_request"),
        (b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 400, "malformed_request"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400, "malformed_request"),
        (_request("/api/v1/threads", "X-Big: " + "a" * 9_000), 431, "headers_too_large"),
        (_request("/api/v1/threads", *(f"X-{i}: 1" for i in range(200))), 431,
         "headers_too_large"),
        (b"GET /" + b"a" * 9_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 431, "headers_too_large"),
        (_request("/api/v1/threads", "Transfer-Encoding: chunked", body=b"zz\r\nhi\r\n0\r\n\r\n"),
         400, "malformed_request"),
        (_request("/api/v1/threads", "Content-Length: 1", "Content-Length: 2", body=b"{}"), 400,
         "malformed_request"),
    ]  # fmt: skip
    for data, status, code in cases:
        message = _error(await exchange(edge, data), status, code)
        assert "aaaa" not in message and TOKEN not in message  # no echo of what was sent

    reply = await edge.get("/healthz")  # and the gateway serves on
    assert reply.status == 200, reply.text


def test_server_errors_keep_their_status_in_the_same_shape() -> None:
    assert classify(500, RuntimeError("boom"))[:2] == (500, "internal")
    assert classify(504, None)[:2] == (504, "timeout")
