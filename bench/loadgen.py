"""A lean HTTP/1.1 load generator: keep-alive connections, one request in flight on each.

A benchmark on a 2-core machine shares the CPU between the server and the client, so the client
must cost as little as possible: it writes pre-formatted requests on raw asyncio streams and reads
responses by Content-Length (both servers measured here always send one). It speaks only to
127.0.0.1, stops after `total` requests or at `deadline` seconds, and records each latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from bench.harness import Latency

Request = tuple[str, bytes]
"""A path and a JSON body to POST (or b"" to GET)."""


@dataclass
class Outcome:
    latency: Latency
    statuses: dict[int, int] = field(default_factory=dict)


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, auth: str):
        self._reader, self._writer = reader, writer
        self._auth = f"Authorization: Bearer {auth}\r\n".encode() if auth else b""

    @classmethod
    async def open(cls, port: int, auth: str = "") -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, auth)

    async def request(self, path: str, body: bytes) -> tuple[int, bytes]:
        method = b"POST" if body else b"GET"
        self._writer.write(
            b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (method, path.encode(), self._auth, len(body), body)
        )
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        return status, await self._reader.readexactly(length)

    def close(self) -> None:
        self._writer.close()


async def run(
    port: int,
    requests: Callable[[int], Request],
    *,
    total: int,
    concurrency: int,
    auth: str = "",
    deadline: float = 120.0,
) -> Outcome:
    """Send `requests(0) … requests(total-1)` over `concurrency` connections."""
    counter = itertools.count()
    samples: list[float] = []
    statuses: dict[int, int] = {}
    stop_at = time.perf_counter() + deadline

    async def worker() -> None:
        connection = await Connection.open(port, auth)
        try:
            while (i := next(counter)) < total and time.perf_counter() < stop_at:
                path, body = requests(i)
                started = time.perf_counter()
                status, _ = await connection.request(path, body)
                samples.append(time.perf_counter() - started)
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Outcome(Latency.of(samples, time.perf_counter() - started), statuses)


async def events_page(connection: Connection, after: int, *, wait: int) -> Any:
    """One page of the committed-event stream past `after` (`wait`: long-poll seconds)."""
    status, body = await connection.request(
        f"/api/v1/events?after={after}&limit=500&wait={wait}", b""
    )
    assert status == 200, (status, body[:200])
    return json.loads(body)


@contextlib.asynccontextmanager
async def in_background(work: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """Run `work` in a task of its own for the block's length; cancel it after."""
    task = asyncio.create_task(work)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
