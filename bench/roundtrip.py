"""Round trips end to end on SQLite: a person posts over HTTP, the echo role's run replies.

Starts `rolecall serve` on a fresh SQLite file with one role, `echo` (the built-in agent that
answers each person message with exactly its text), resolves 1,000 conversations
{person:uN, role:echo}, then `posters` keep-alive connections post person messages. Each poster
owns its share of the conversations and goes round them with one message outstanding at a time,
so every conversation is a FIFO: post, wait for the echo, post to the next one. Replies are
observed as an outside listener would see them, on the committed-event stream
(`GET /api/v1/events` long-poll, on a connection of its own). A round trip's latency runs from
the post being sent to the reply's commit being seen on the stream.

The first message of each conversation creates its run and starts its session; that pass is
measured on its own ("first contact"); then `round_trips` more are measured warm, and shorter
warm passes at the `sweep` poster counts show what lower concurrency buys in latency. The
ceiling, in the same run: the same posts from the same number of clients to a fresh gateway with
no roles, so nothing replies (`bench.ingest`'s gateway measurement).

    python -m bench.roundtrip [--conversations 1000] [--round-trips 10000] [--posters 32]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import ingest, loadgen
from bench.harness import Latency, cpu_seconds, echo_role, free_port, gateway_env, server

REPLY_TIMEOUT = 30.0
"""Seconds a poster waits for one echo before it counts the reply as missing and stops."""
DEADLINE = 300.0
"""Seconds one pass may take before its posters stop."""
SWEEP = (1, 8)
SWEEP_ROUND_TRIPS = 1_000


@dataclass(frozen=True, slots=True)
class RoundTrips:
    posters: int
    latency: Latency
    """Post sent → the reply's commit seen on the event stream; its rate is round trips/s."""
    posted: Latency
    """Post sent → its 201 answer (the person message committed)."""
    missing: int
    """Posts whose reply was not seen within `REPLY_TIMEOUT`."""
    cpu_us_per_round_trip: float


@dataclass(frozen=True, slots=True)
class Result:
    first: RoundTrips
    warm: RoundTrips
    sweep: list[RoundTrips]
    ceiling: ingest.Ingest
    """The same posts to a gateway where nothing replies."""


class Replies:
    """Follows the committed-event stream and resolves the waiter of each echo it sees."""

    def __init__(self, connection: loadgen.Connection, after: int) -> None:
        self._connection, self._after = connection, after
        self._waiting: dict[tuple[str, str], asyncio.Future[float]] = {}

    @classmethod
    async def open(cls, port: int, token: str) -> Replies:
        """A follower starting at the stream's current end."""
        connection = await loadgen.Connection.open(port, token)
        after = 0
        while True:
            page = await loadgen.events_page(connection, after, wait=0)
            if not page["events"]:
                return cls(connection, after)
            after = page["next"]

    def expect(self, thread_id: str, text: str) -> asyncio.Future[float]:
        """The time the echo of `text` in `thread_id` is seen (set it up before posting)."""
        future = asyncio.get_running_loop().create_future()
        self._waiting[(thread_id, text)] = future
        return future

    def forget(self, thread_id: str, text: str) -> None:
        self._waiting.pop((thread_id, text), None)

    async def follow(self) -> None:
        while True:
            page = await loadgen.events_page(self._connection, self._after, wait=5)
            seen = time.perf_counter()
            for event in page["events"]:
                if event["kind"] == "message" and event["author"] == "role:echo":
                    future = self._waiting.pop((event["thread_id"], event["text"]), None)
                    if future is not None and not future.done():
                        future.set_result(seen)
            self._after = page["next"]

    @contextlib.asynccontextmanager
    async def following(self) -> AsyncIterator[Replies]:
        try:
            async with loadgen.in_background(self.follow()):
                yield self
        finally:
            self._connection.close()


async def resolve(port: int, token: str, count: int, *, clients: int = 16) -> list[str]:
    """Resolve conversations {person:uI, role:echo} for I in 0…count-1; their ids, in order."""
    ids = [""] * count

    async def client(first: int) -> None:
        connection = await loadgen.Connection.open(port, token)
        try:
            for i in range(first, count, clients):
                body = json.dumps({"participants": [f"person:u{i}", "role:echo"]}).encode()
                status, answer = await connection.request("/api/v1/threads", body)
                assert status == 201, (status, answer)
                ids[i] = json.loads(answer)["id"]
        finally:
            connection.close()

    await asyncio.gather(*(client(j) for j in range(min(clients, count))))
    return ids


async def round_trips(
    port: int,
    token: str,
    replies: Replies,
    ids: Sequence[str],
    *,
    total: int,
    posters: int,
    tag: str,
    pid: int,
) -> RoundTrips:
    """`total` round trips from `posters` posters; poster j owns conversations j, j+posters, …"""
    posters = min(posters, len(ids))
    samples: list[float] = []
    posted: list[float] = []
    missing = 0
    stop_at = time.perf_counter() + DEADLINE

    async def poster(j: int) -> None:
        nonlocal missing
        owned = range(j, len(ids), posters)
        share = total // posters + (1 if j < total % posters else 0)
        connection = await loadgen.Connection.open(port, token)
        try:
            for n in range(share):
                if time.perf_counter() > stop_at:
                    return
                k = owned[n % len(owned)]
                text = f"{tag} {n} from person {k}"
                reply = replies.expect(ids[k], text)
                body = json.dumps({"author": f"person:u{k}", "text": text}).encode()
                sent = time.perf_counter()
                status, answer = await connection.request(
                    f"/api/v1/threads/{ids[k]}/messages", body
                )
                posted.append(time.perf_counter() - sent)
                assert status == 201, (status, answer)
                try:
                    seen = await asyncio.wait_for(reply, REPLY_TIMEOUT)
                except TimeoutError:
                    replies.forget(ids[k], text)
                    missing += 1
                    return
                samples.append(seen - sent)
        finally:
            connection.close()

    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    await asyncio.gather(*(poster(j) for j in range(posters)))
    seconds = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu
    if not samples:
        raise RuntimeError(f"no echo was seen ({missing} posts went unanswered)")
    latency = Latency.of(samples, seconds)
    return RoundTrips(
        posters, latency, Latency.of(posted, seconds), missing, cpu / latency.count * 1e6
    )


def measure_echo(
    workdir: Path,
    conversations: int,
    total: int,
    posters: int,
    *,
    sweep: Sequence[int] = SWEEP,
    sweep_round_trips: int = SWEEP_ROUND_TRIPS,
    env: Mapping[str, str] | None = None,
) -> tuple[RoundTrips, RoundTrips, list[RoundTrips]]:
    """First contact with every conversation, then `total` warm round trips, then the sweep.
    `env`: more of the gateway's environment (`bench.traces` turns tracing on with it)."""
    port, token = free_port(), secrets.token_urlsafe(24)
    env = {
        **gateway_env(workdir / "echo", port, token, roles_dir=echo_role(workdir / "roles")),
        **(env or {}),
    }
    with server(["-m", "gateway", "serve"], port=port, env=env) as process:

        async def load() -> tuple[RoundTrips, RoundTrips, list[RoundTrips]]:
            ids = await resolve(port, token, conversations)
            async with (await Replies.open(port, token)).following() as replies:

                async def go(tag: str, count: int, posters: int) -> RoundTrips:
                    return await round_trips(
                        port,
                        token,
                        replies,
                        ids,
                        total=count,
                        posters=posters,
                        tag=tag,
                        pid=process.pid,
                    )

                first = await go("hello", conversations, posters)
                warm = await go("message", total, posters)
                swept = [await go(f"p{p}", sweep_round_trips, p) for p in sweep]
                return first, warm, swept

        return asyncio.run(load())


def measure(
    workdir: Path,
    conversations: int,
    total: int,
    posters: int,
    *,
    sweep: Sequence[int] = SWEEP,
    sweep_round_trips: int = SWEEP_ROUND_TRIPS,
    ceiling: ingest.Ingest | None = None,
) -> Result:
    """The echo passes, and the ceiling (measured here unless the caller measured it already)."""
    first, warm, swept = measure_echo(
        workdir, conversations, total, posters, sweep=sweep, sweep_round_trips=sweep_round_trips
    )
    if ceiling is None:
        ceiling = ingest.measure_gateway(workdir / "ingest", total, conversations, posters)
    return Result(first, warm, swept, ceiling)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--round-trips", type=int, default=10_000)
    parser.add_argument("--posters", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = measure(Path(tmp), args.conversations, args.round_trips, args.posters)
    passes = [("first", result.first), ("warm", result.warm)]
    for name, trips in passes + [("warm", trips) for trips in result.sweep]:
        latency = trips.latency
        print(
            f"{name:6} {trips.posters:3} posters {latency.rate:6.0f} round trips/s  "
            f"p50 {latency.p50_ms:7.2f} ms  p99 {latency.p99_ms:7.2f} ms  "
            f"(post answered: p50 {trips.posted.p50_ms:.2f} ms)  "
            f"server CPU {trips.cpu_us_per_round_trip:5.0f} us/round trip  missing {trips.missing}"
        )
    ceiling = result.ceiling.latency
    print(
        f"ingest {args.posters:3} clients {ceiling.rate:6.0f} messages/s     "
        f"p50 {ceiling.p50_ms:7.2f} ms  p99 {ceiling.p99_ms:7.2f} ms  "
        f"server CPU {result.ceiling.cpu_us_per_message:5.0f} us/message"
    )
    print(f"round trips/s ÷ ingest messages/s: {result.warm.latency.rate / ceiling.rate:.2f}")


if __name__ == "__main__":
    main()
