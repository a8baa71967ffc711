"""Message ingest over HTTP on SQLite: 32 concurrent clients, 20,000 messages, 1,000 threads.

Runs two ceilings from `bench.ceiling_server` — aiohttp alone (no database), and a bare handler
doing one stdlib sqlite3 INSERT and COMMIT per request — then the gateway (`rolecall serve` on a
fresh SQLite file, with no role manifests, so no run answers), each in its own process under the
same load from this process, and reports throughput, p50, p99 and the server's CPU time per
message.

    python -m bench.ingest [--messages 20000] [--threads 1000] [--clients 32]
    python -m bench.ingest --malformed 0.1 [--rounds 2]

With `--malformed SHARE` it measures the gateway instead with that share of the requests
malformed — lone surrogates, NULs, 1e999, integers past 64 bits, JSON nested 200 deep, bytes
that are not UTF-8, JSON cut short, in the text, the author or the context — which the HTTP edge
refuses (4xx, never a 5xx), against a clean run on a fresh gateway just before it, `--rounds`
times: the throughput and latency of the valid requests among bad ones, next to a clean run
measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import loadgen
from bench.harness import Latency, cpu_seconds, free_port, gateway_env, server


@dataclass(frozen=True, slots=True)
class Ingest:
    latency: Latency
    cpu_us_per_message: float


_BAD_BODIES: tuple[bytes, ...] = (
    b'{"author": "AUTHOR", "text": "lone \\ud800 surrogate"}',
    b'{"author": "AUTHOR", "text": "a NUL \\u0000 here"}',
    b'{"author": "AUTHOR", "text": "x", "context": {"kind": "note", "task": 1e999}}',
    b'{"author": "AUTHOR", "text": "x", "context": {"kind": "note", "task": 9223372036854775808}}',
    b'{"author": "AUTHOR", "text": ' + b"[" * 200 + b"]" * 200 + b"}",
    b'{"author": "AUTHOR", "text": "not UTF-8: \xff\xfe"}',
    b'{"author": "person:p\\udfff", "text": "a lone surrogate in the author"}',
    b'{"author": "AUTHOR", "text": "cut sho',
)
"""Bodies the edge must refuse (AUTHOR is replaced by a member of the thread)."""


def _malformed(threads: list[str], i: int) -> loadgen.Request:
    k = i % len(threads)
    body = _BAD_BODIES[(i // 10) % len(_BAD_BODIES)].replace(b"AUTHOR", f"person:p{k}".encode())
    return f"/api/v1/threads/{threads[k]}/messages", body


@dataclass(frozen=True, slots=True)
class Mixed:
    """One round: a clean run, then a run with `share` of the requests malformed."""

    clean: Ingest
    valid: Latency
    """The valid requests of the mixed run: their count over the whole run's time."""
    bad: Latency
    statuses: dict[int, int]
    share: float
    load: tuple[float, float]
    """The machine's 1-minute load average as the clean run and the mixed run ended."""


async def _mixed_load(
    port: int, token: str, ids: list[str], total: int, clients: int, share: float
) -> tuple[Latency, Latency, dict[int, int]]:
    """`total` requests, every `1/share`-th one malformed, over `clients` connections."""
    every = round(1 / share)
    counter = iter(range(total))
    valid: list[float] = []
    bad: list[float] = []
    statuses: dict[int, int] = {}

    async def worker() -> None:
        connection = await loadgen.Connection.open(port, token)
        try:
            for i in counter:
                malformed = i % every == every - 1
                path, body = _malformed(ids, i) if malformed else _message(ids, i)
                started = time.perf_counter()
                status, _ = await connection.request(path, body)
                (bad if malformed else valid).append(time.perf_counter() - started)
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    seconds = time.perf_counter() - started
    return Latency.of(valid, seconds), Latency.of(bad, seconds), statuses


def measure_mixed(
    workdir: Path, messages: int, threads: int, clients: int, share: float
) -> tuple[Latency, Latency, dict[int, int]]:
    port, token = free_port(), secrets.token_urlsafe(24)
    env = gateway_env(workdir, port, token)
    with server(["-m", "gateway", "serve"], port=port, env=env):

        async def load() -> tuple[Latency, Latency, dict[int, int]]:
            ids = await _create_threads(port, token, threads)
            return await _mixed_load(port, token, ids, messages, clients, share)

        valid, bad, statuses = asyncio.run(load())
    refused = sum(n for status, n in statuses.items() if 400 <= status < 500)
    assert statuses.get(201, 0) == valid.count, statuses  # every valid request was stored
    assert refused == bad.count, statuses  # every malformed one refused, none a 5xx
    return valid, bad, statuses


def measure_malformed(
    workdir: Path, messages: int, threads: int, clients: int, *, share: float, rounds: int
) -> list[Mixed]:
    """`rounds` pairs of runs, each on fresh gateways: clean, then with `share` malformed."""
    out = []
    for r in range(rounds):
        clean = measure_gateway(workdir / f"clean-{r}", messages, threads, clients)
        after_clean = os.getloadavg()[0]
        valid, bad, statuses = measure_mixed(
            workdir / f"mixed-{r}", messages, threads, clients, share
        )
        out.append(Mixed(clean, valid, bad, statuses, share, (after_clean, os.getloadavg()[0])))
    return out


def _message(threads: list[str], i: int) -> loadgen.Request:
    k = i % len(threads)
    body = json.dumps({"author": f"person:p{k}", "text": f"message {i} from person {k}"})
    return f"/api/v1/threads/{threads[k]}/messages", body.encode()


async def _create_threads(port: int, token: str, count: int) -> list[str]:
    def resolve(i: int) -> loadgen.Request:
        body = json.dumps({"participants": [f"person:p{i}", "role:concierge"]})
        return "/api/v1/threads", body.encode()

    connection = await loadgen.Connection.open(port, token)
    try:
        ids = []
        for i in range(count):
            status, body = await connection.request(*resolve(i))
            assert status == 201, (status, body)
            ids.append(json.loads(body)["id"])
        return ids
    finally:
        connection.close()


def measure_ceiling(
    workdir: Path, messages: int, threads: int, clients: int, *, database: bool = True
) -> Ingest:
    """The ceiling: one commit per request (`database`), or aiohttp with no database at all."""
    port = free_port()
    ids = [f"t{i}" for i in range(threads)]
    target = str(workdir / "ceiling.db") if database else "-"
    with server(["-m", "bench.ceiling_server", str(port), target], port=port) as process:
        started = cpu_seconds(process.pid)
        outcome = asyncio.run(
            loadgen.run(port, lambda i: _message(ids, i), total=messages, concurrency=clients)
        )
        cpu = cpu_seconds(process.pid) - started
    assert outcome.statuses == {201: messages}, outcome.statuses
    return Ingest(outcome.latency, cpu / messages * 1e6)


def measure_gateway(workdir: Path, messages: int, threads: int, clients: int) -> Ingest:
    port, token = free_port(), secrets.token_urlsafe(24)
    env = gateway_env(workdir / "gateway", port, token)  # no roles: nothing answers
    with server(["-m", "gateway", "serve"], port=port, env=env) as process:

        async def load() -> tuple[loadgen.Outcome, float]:
            ids = await _create_threads(port, token, threads)
            started = cpu_seconds(process.pid)
            outcome = await loadgen.run(
                port, lambda i: _message(ids, i), total=messages, concurrency=clients, auth=token
            )
            return outcome, cpu_seconds(process.pid) - started

        outcome, cpu = asyncio.run(load())
    assert outcome.statuses == {201: messages}, outcome.statuses
    return Ingest(outcome.latency, cpu / messages * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=1_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--malformed", type=float, default=0.0, help="share of bad requests")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.malformed:
        with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
            mixed = measure_malformed(
                Path(tmp),
                args.messages,
                args.threads,
                args.clients,
                share=args.malformed,
                rounds=args.rounds,
            )
        for one in mixed:
            clean = one.clean.latency
            print(
                f"clean    {clean.rate:8.0f} msg/s  p50 {clean.p50_ms:6.2f} ms  "
                f"p99 {clean.p99_ms:6.2f} ms\n"
                f"mixed    {one.valid.rate:8.0f} valid msg/s  p50 {one.valid.p50_ms:6.2f} ms  "
                f"p99 {one.valid.p99_ms:6.2f} ms; malformed p99 {one.bad.p99_ms:6.2f} ms; "
                f"statuses {dict(sorted(one.statuses.items()))}"
            )
        return
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        results = measure_all(Path(tmp), args.messages, args.threads, args.clients)
    for name, result in results.items():
        latency = result.latency
        print(
            f"{name:8} {latency.rate:8.0f} msg/s  p50 {latency.p50_ms:6.2f} ms  "
            f"p99 {latency.p99_ms:6.2f} ms  server CPU {result.cpu_us_per_message:5.0f} us/msg"
        )
    ratio = results["gateway"].latency.rate / results["commit"].latency.rate
    print(f"gateway/ceiling throughput: {ratio:.2f}")


def measure_all(workdir: Path, messages: int, threads: int, clients: int) -> dict[str, Ingest]:
    return {
        "aiohttp": measure_ceiling(workdir, messages, threads, clients, database=False),
        "commit": measure_ceiling(workdir, messages, threads, clients),
        "gateway": measure_gateway(workdir, messages, threads, clients),
    }


if __name__ == "__main__":
    main()
