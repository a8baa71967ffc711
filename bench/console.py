"""The operator console's pages with 10,000 conversations and a timeline of 100,000 events.

Builds, on a fresh SQLite file:

- one conversation of 100,000 events {person:alice, person:bob, role:concierge} with five
  blackout windows of alice's (`bench.timeline.build`, through the repository);
- then, through `rolecall serve` with the echo role: 10,000 people (`u0` … `u9999`, each with
  the Slack identity `slack:T1:U<n>`), a conversation {person:u<n>, role:echo} each, and one round
  trip in each (the person's message and the echo's reply), so there are 10,000 runs with a turn.

Then one browser's worth of requests (its own cookie jar, one connection) signs in to the console
and asks each page in turn, `reads` times over, one request outstanding: the overview, finding a
person by slug and by Slack identity, a role's 10,000 conversations (the first page), the big
conversation's newest page, viewed as alice (whose blackouts the page must reach past), and a
page in its middle, and the pages of runs, people, tasks, endpoints, Slack and roles. A page
answered with anything but 200 stops the benchmark. The floor, in the same run on the same
connection: `GET /healthz`, which does nothing.

    python -m bench.console [--conversations 10000] [--events 100000] [--reads 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench import loadgen, roundtrip, timeline
from bench.harness import Latency, echo_role, free_port, gateway_env, server
from core.storage.database import upgrade_schema

HEADING = "## Console pages with 10,000 conversations"
TARGET = "every page under 200 ms (p99)"
CLIENTS = 16
POSTERS = 32


def sample(conversations: int) -> int:
    """The person whose pages are read: u4242 of 10,000 (one in the middle of fewer)."""
    return 4242 if conversations > 4242 else conversations // 2


@dataclass(frozen=True, slots=True)
class Page:
    name: str
    path: str
    latency: Latency
    size: int
    """Bytes of the page's HTML (the last answer)."""


@dataclass(frozen=True, slots=True)
class Result:
    conversations: int
    events: int
    floor: Latency
    pages: list[Page]


def pages(thread: str, run: str, conversations: int, events: int) -> list[tuple[str, str]]:
    """The pages asked for: (what, path)."""
    middle = events // 2
    one = sample(conversations)
    return [
        ("overview", "/console"),
        ("find a person by slug", f"/console/conversations?q=u{one}"),
        ("find a person by Slack identity", f"/console/conversations?q=slack:T1:U{one}"),
        ("a role's conversations (first page)", "/console/conversations?participant=role:echo"),
        ("the big conversation, newest page", f"/console/conversations/{thread}"),
        ("… viewed as alice (blackouts)", f"/console/conversations/{thread}?as=person:alice"),
        ("… a page in its middle", f"/console/conversations/{thread}?before={middle}"),
        ("runs of the echo role", "/console/runs?role=echo"),
        ("one run and its transcript", f"/console/runs/{run}"),
        ("people (first page)", "/console/people"),
        ("one person", f"/console/people/u{one}"),
        ("tasks", "/console/tasks"),
        ("endpoints", "/console/endpoints"),
        ("Slack", "/console/slack"),
        ("roles", "/console/roles"),
        ("one role", "/console/roles/echo"),
    ]


async def _people(port: int, token: str, count: int) -> None:
    """People u0 … u<count-1>, each with the Slack identity slack:T1:U<n>."""

    async def client(first: int) -> None:
        connection = await loadgen.Connection.open(port, token)
        try:
            for i in range(first, count, CLIENTS):
                made = {"slug": f"u{i}", "display_name": f"User {i}", "email": f"u{i}@example.com"}
                status, answer = await connection.request(
                    "/api/v1/persons", json.dumps(made).encode()
                )
                assert status == 201, (status, answer)
                identity = json.dumps({"identity": f"slack:T1:U{i}"}).encode()
                status, answer = await connection.request(
                    f"/api/v1/persons/u{i}/identities", identity
                )
                assert status == 201, (status, answer)
        finally:
            connection.close()

    await asyncio.gather(*(client(j) for j in range(min(CLIENTS, count))))


async def _populate(port: int, token: str, pid: int, count: int) -> str:
    """The people, their conversations and a round trip in each; a run's id."""
    await _people(port, token, count)
    ids = await roundtrip.resolve(port, token, count)
    async with (await roundtrip.Replies.open(port, token)).following() as replies:
        trips = await roundtrip.round_trips(
            port, token, replies, ids, total=count, posters=POSTERS, tag="hello", pid=pid
        )
    if trips.missing:
        raise RuntimeError(f"{trips.missing} of {count} echoes were not seen")
    connection = await loadgen.Connection.open(port, token)
    try:
        status, answer = await connection.request(f"/api/v1/runs?thread={ids[sample(count)]}", b"")
        assert status == 200, (status, answer)
        run: str = json.loads(answer)["runs"][0]["id"]
        return run
    finally:
        connection.close()


async def _read(
    session: aiohttp.ClientSession, base: str, path: str, reads: int
) -> tuple[Latency, int]:
    samples: list[float] = []
    size = 0
    started = time.perf_counter()
    for _ in range(reads):
        t0 = time.perf_counter()
        async with session.get(base + path, allow_redirects=False) as response:
            body = await response.read()
            if response.status != 200:
                text = re.sub(r"<[^>]+>", " ", body.decode(errors="replace"))
                raise RuntimeError(f"{path} answered {response.status}: {' '.join(text.split())}")
        samples.append(time.perf_counter() - t0)
        size = len(body)
    return Latency.of(samples, time.perf_counter() - started), size


async def _browse(
    port: int, token: str, asked: Sequence[tuple[str, str]], reads: int
) -> tuple[Latency, list[Page]]:
    base = f"http://127.0.0.1:{port}"
    jar = aiohttp.CookieJar(unsafe=True)  # keeps the cookie of 127.0.0.1, as a browser does
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(cookie_jar=jar, connector=connector) as session:
        async with session.post(
            base + "/console/login", data={"token": token}, allow_redirects=False
        ) as signed:
            assert signed.status == 303, (signed.status, await signed.text())
        floor, _ = await _read(session, base, "/healthz", reads)
        found = []
        for name, path in asked:
            await _read(session, base, path, 3)  # warm: the first answer compiles templates
            latency, size = await _read(session, base, path, reads)
            found.append(Page(name, path, latency, size))
        return floor, found


def measure(workdir: Path, conversations: int, events: int, reads: int) -> Result:
    path = workdir / "console.db"
    url = f"sqlite+aiosqlite:///{path}"
    asyncio.run(upgrade_schema(url))
    thread = asyncio.run(timeline.build(url, events))
    port, token = free_port(), secrets.token_urlsafe(24)
    roles = echo_role(workdir / "roles")
    env = gateway_env(workdir, port, token, roles_dir=roles, database_url=url)
    with server(["-m", "gateway", "serve"], port=port, env=env) as process:
        run = asyncio.run(_populate(port, token, process.pid, conversations))
        floor, found = asyncio.run(
            _browse(port, token, pages(thread, run, conversations, events), reads)
        )
    return Result(conversations, events, floor, found)


def section(result: Result, *, measured: str) -> str:
    worst = max(page.latency.p99_ms for page in result.pages)
    met = "met" if worst < 200 else "**not met**"
    rows = "\n".join(
        f"| {page.name} | `{page.path.split('?')[0]}` | {page.latency.p50_ms:.1f} "
        f"| {page.latency.p99_ms:.1f} | {page.latency.p99_ms / result.floor.p99_ms:.0f} "
        f"| {page.size / 1024:,.0f} |"
        for page in result.pages
    )
    return f"""{HEADING}

{measured}

`python -m bench.console`: {result.conversations:,} people with a Slack identity each, a
conversation {{person, role:echo}} each with one round trip in it (so {result.conversations:,}
runs with a turn), and one conversation of {result.events:,} events with five blackout windows.
One signed-in browser asks each page {result.pages[0].latency.count} times, one request at a
time, on one connection, after three unmeasured reads; the floor is `GET /healthz` on the same
connection (p50 {result.floor.p50_ms:.2f} ms, p99 {result.floor.p99_ms:.2f} ms). Target:
{TARGET} — {met} (the slowest page's p99 is {worst:.1f} ms).

| page | route | p50 ms | p99 ms | p99 over the floor's | KiB |
| --- | --- | --- | --- | --- | --- |
{rows}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = measure(Path(tmp), args.conversations, args.events, args.reads)
    print(f"floor      p50 {result.floor.p50_ms:7.2f} ms  p99 {result.floor.p99_ms:7.2f} ms")
    for page in result.pages:
        print(
            f"{page.name:40} p50 {page.latency.p50_ms:7.2f} ms  p99 {page.latency.p99_ms:7.2f} ms"
            f"  {page.size / 1024:6.0f} KiB"
        )


if __name__ == "__main__":
    main()
