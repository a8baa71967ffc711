"""Message ingest over HTTP on SQLite: 32 concurrent clients, 20,000 messages, 1,000 threads.

Runs two ceilings from `bench.ceiling_server` — aiohttp alone (no database), and a bare handler
doing one stdlib sqlite3 INSERT and COMMIT per request — then the gateway (`rolecall serve` on a
fresh SQLite file, with no role manifests, so no run answers), each in its own process under the
same load from this process, and reports throughput, p50, p99 and the server's CPU time per
message.

    python -m bench.ingest [--messages 20000] [--threads 1000] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import loadgen
from bench.harness import Latency, cpu_seconds, free_port, gateway_env, server


@dataclass(frozen=True, slots=True)
class Ingest:
    latency: Latency
    cpu_us_per_message: float


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
    args = parser.parse_args()
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
