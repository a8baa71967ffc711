"""Timeline read for one participant: 5 blackout windows in a thread of 100,000 events.

Builds the thread through the repository (person:alice, person:bob, role:concierge; alice is
removed and re-added five times, the last window ending a few events before the end, so the newest
page has to reach past it), then measures the newest 50 events alice may see:

- through the repository (`ThreadRepository.latest`), in process;
- over HTTP (`GET …/timeline?as=person:alice&latest=true&limit=50`) from `rolecall serve`;
- the ceiling: the newest 50 rows of the thread with stdlib sqlite3, no filter, no objects.

    python -m bench.timeline [--events 100000] [--reads 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sqlite3
import tempfile
import time
from pathlib import Path

from bench import loadgen
from bench.harness import Latency, free_port, gateway_env, server
from core.model.membership import ParticipantState
from core.model.participants import ParticipantSet, parse_address
from core.model.timeline import ThreadId
from core.storage.database import open_database, upgrade_schema

ALICE = parse_address("person:alice")
BOB = parse_address("person:bob")
ROLE = parse_address("role:concierge")


def windows(events: int) -> list[tuple[int, int]]:
    """Five blackout windows (start, length) as event counts; the last ends just before the end."""
    span = max(events // 50, 10)
    starts = [events * k // 5 for k in range(1, 5)] + [events - span - 20]
    return [(start, span) for start in starts]


async def build(url: str, events: int) -> ThreadId:
    db = await open_database(url)
    try:
        thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, BOB, ROLE]))
        removals = {start: start + span for start, span in windows(events)}
        readds: dict[int, int] = {}
        written = 0
        chunk: list[asyncio.Future[object]] = []
        while written < events:
            if written in removals:
                await asyncio.gather(*chunk)
                chunk = []
                await db.threads.set_participant_state(thread.id, ALICE, ParticipantState.REMOVED)
                readds[removals[written]] = 1
            elif written in readds:
                await asyncio.gather(*chunk)
                chunk = []
                await db.threads.set_participant_state(thread.id, ALICE, ParticipantState.ACTIVE)
            else:
                author = ROLE if written % 2 else BOB
                chunk.append(
                    asyncio.ensure_future(
                        db.threads.post_message(thread.id, author, f"event {written}")
                    )
                )
                if len(chunk) >= 512:
                    await asyncio.gather(*chunk)
                    chunk = []
            written += 1
        await asyncio.gather(*chunk)
        return thread.id
    finally:
        await db.close()


async def read_repository(url: str, thread_id: ThreadId, reads: int) -> Latency:
    db = await open_database(url)
    try:
        samples = []
        page = await db.threads.latest(thread_id, viewer=ALICE, limit=50)
        assert len(page.events) == 50
        started = time.perf_counter()
        for _ in range(reads):
            t0 = time.perf_counter()
            await db.threads.latest(thread_id, viewer=ALICE, limit=50)
            samples.append(time.perf_counter() - t0)
        return Latency.of(samples, time.perf_counter() - started)
    finally:
        await db.close()


async def read_http(port: int, token: str, thread_id: str, reads: int) -> Latency:
    path = f"/api/v1/threads/{thread_id}/timeline?as=person:alice&latest=true&limit=50"
    connection = await loadgen.Connection.open(port, token)
    try:
        samples = []
        status, _ = await connection.request(path, b"")
        assert status == 200, status
        started = time.perf_counter()
        for _ in range(reads):
            t0 = time.perf_counter()
            status, _ = await connection.request(path, b"")
            samples.append(time.perf_counter() - t0)
            assert status == 200
        return Latency.of(samples, time.perf_counter() - started)
    finally:
        connection.close()


def read_ceiling(path: Path, thread_id: str, reads: int) -> Latency:
    db = sqlite3.connect(path)
    samples = []
    started = time.perf_counter()
    for _ in range(reads):
        t0 = time.perf_counter()
        rows = db.execute(
            "SELECT * FROM events WHERE thread_id = ? ORDER BY seq DESC LIMIT 50", (thread_id,)
        ).fetchall()
        samples.append(time.perf_counter() - t0)
        assert len(rows) == 50
    db.close()
    return Latency.of(samples, time.perf_counter() - started)


def measure(events: int, reads: int) -> dict[str, Latency]:
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        path = Path(tmp) / "timeline.db"
        url = f"sqlite+aiosqlite:///{path}"
        asyncio.run(upgrade_schema(url))
        thread_id = asyncio.run(build(url, events))
        results = {
            "ceiling": read_ceiling(path, thread_id, reads),
            "repository": asyncio.run(read_repository(url, thread_id, reads)),
        }
        port, token = free_port(), secrets.token_urlsafe(24)
        # No role manifests: a concierge would otherwise start answering bob's 50,000 messages.
        env = gateway_env(Path(tmp), port, token, database_url=url)
        with server(["-m", "gateway", "serve"], port=port, env=env):
            results["http"] = asyncio.run(read_http(port, token, thread_id, reads))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=1_000)
    args = parser.parse_args()
    for name, result in measure(args.events, args.reads).items():
        print(f"{name:10} p50 {result.p50_ms:6.3f} ms  p99 {result.p99_ms:6.3f} ms")


if __name__ == "__main__":
    main()
