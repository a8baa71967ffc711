"""Message ingest over HTTP on SQLite: 32 concurrent clients, 20,000 messages, 1,000 threads.

Runs the ceiling (`bench.ceiling_server`: a bare aiohttp handler, one stdlib sqlite3 INSERT and
COMMIT per request) and then the gateway (`rolecall serve` on a fresh SQLite file), each in its own
process, under the same load from this process, and reports throughput, p50 and p99.

    python -m bench.ingest [--messages 20000] [--threads 1000] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import tempfile
from pathlib import Path

from bench import loadgen
from bench.harness import Latency, free_port, server


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


def measure_ceiling(workdir: Path, messages: int, threads: int, clients: int) -> Latency:
    port = free_port()
    ids = [f"t{i}" for i in range(threads)]
    with server(["-m", "bench.ceiling_server", str(port), str(workdir / "ceiling.db")], port=port):
        outcome = asyncio.run(
            loadgen.run(port, lambda i: _message(ids, i), total=messages, concurrency=clients)
        )
    assert outcome.statuses == {201: messages}, outcome.statuses
    return outcome.latency


def measure_gateway(workdir: Path, messages: int, threads: int, clients: int) -> Latency:
    port, token = free_port(), secrets.token_urlsafe(24)
    env = {
        "ROLECALL_VAR_DIR": str(workdir / "var"),
        "ROLECALL_DATABASE_URL": "",
        "ROLECALL_PORT": str(port),
        "ROLECALL_API_TOKEN": token,
        "ROLECALL_LOG_LEVEL": "warning",
    }
    with server(["-m", "gateway", "serve"], port=port, env=env):

        async def load() -> loadgen.Outcome:
            ids = await _create_threads(port, token, threads)
            return await loadgen.run(
                port, lambda i: _message(ids, i), total=messages, concurrency=clients, auth=token
            )

        outcome = asyncio.run(load())
    assert outcome.statuses == {201: messages}, outcome.statuses
    return outcome.latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=1_000)
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        workdir = Path(tmp)
        ceiling = measure_ceiling(workdir, args.messages, args.threads, args.clients)
        gateway = measure_gateway(workdir, args.messages, args.threads, args.clients)
    for name, result in (("ceiling", ceiling), ("gateway", gateway)):
        print(
            f"{name:8} {result.rate:8.0f} msg/s  p50 {result.p50_ms:6.2f} ms  "
            f"p99 {result.p99_ms:6.2f} ms  ({result.count} in {result.seconds:.2f} s)"
        )
    print(f"gateway/ceiling throughput: {gateway.rate / ceiling.rate:.2f}")


if __name__ == "__main__":
    main()
