"""Round trips on PostgreSQL with 1, 2 and 3 replicas, and how long a takeover takes.

Each pass starts N `rolecall serve` processes (replicas) on a fresh PostgreSQL database of its
own on the machine's server (127.0.0.1:5432, or ROLECALL_TEST_POSTGRES_URL), with the echo role,
resolves `conversations` conversations and has `posters` posters send person messages, one
outstanding each, every request to the next replica in turn (no affinity: a conversation's
messages land on every replica). Replies are seen on the committed-event stream of the first
replica, so a reply committed on another replica crosses replicas to be seen. A SQLite pass (one
process, the embedded default) is the reference for CPU per round trip.

CPU per round trip is the whole machine's busy time (replicas and PostgreSQL together) less the
load generator's own, over the round trips. After each pass the database is asked how many person
messages went unanswered and how many were answered twice.

The paced pass sends `paced` round trips a second (open loop, spread over the posters) to three
replicas and reports the reply latency there. The takeover pass kills (SIGKILL) the replica
running a turn, `kills` times, and measures the time from the kill to the reply from the run's
new owner, at the default `ROLECALL_REPLICA_TIMEOUT`.

    python -m bench.replicas [--round-trips 5000] [--posters 32] [--kills 10] [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bench import loadgen
from bench.harness import (
    ROOT,
    Latency,
    echo_role,
    free_port,
    gateway_env,
    machine,
    machine_busy_seconds,
    server,
    today,
)

ADMIN_URL = os.environ.get(
    "ROLECALL_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
HEADING = "## Scale-out: replicas on one PostgreSQL"
REPORT = ROOT / "docs" / "benchmarks.md"
REPLY_TIMEOUT = 30.0
WIDGET_KEY = "bench-replicas-widget-key-" + "k" * 24


@dataclass(frozen=True, slots=True)
class Pass:
    label: str
    replicas: int
    latency: Latency
    cpu_us_per_round_trip: float
    unanswered: int
    doubled: int


@contextlib.contextmanager
def database() -> Iterator[str]:
    """A PostgreSQL database of the pass's own, dropped afterwards; its SQLAlchemy URL."""
    name = f"rolecall_bench_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _admin(statement: str) -> None:
    connection = await asyncpg.connect(ADMIN_URL)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextlib.contextmanager
def replicas(
    workdir: Path, url: str, count: int, token: str, **settings: str
) -> Iterator[list[tuple[int, subprocess.Popen[bytes]]]]:
    """`count` replicas on `url` (the first one started alone: it migrates), each ready."""
    roles = echo_role(workdir / "roles")
    with contextlib.ExitStack() as stack:
        started = []
        for i in range(count):
            port = free_port()
            env = gateway_env(workdir / f"r{i}", port, token, roles_dir=roles, database_url=url)
            env |= {"ROLECALL_REPLICA_ID": f"r{i}", "ROLECALL_WIDGET_KEY": WIDGET_KEY}
            env |= settings
            process = stack.enter_context(server(["-m", "gateway", "serve"], port=port, env=env))
            started.append((port, process))
        yield started


async def _resolve(ports: list[int], token: str, count: int) -> list[str]:
    connections = [await loadgen.Connection.open(port, token) for port in ports]
    ids = []
    try:
        for i in range(count):
            body = json.dumps({"participants": [f"person:u{i}", "role:echo"]}).encode()
            status, answer = await connections[i % len(connections)].request(
                "/api/v1/threads", body
            )
            assert status == 201, answer
            ids.append(json.loads(answer)["id"])
    finally:
        for connection in connections:
            connection.close()
    return ids


async def _load(
    ports: list[int],
    token: str,
    ids: list[str],
    *,
    total: int,
    posters: int,
    paced: float = 0.0,
) -> tuple[Latency, float]:
    """`total` round trips; their latency and the machine's busy CPU seconds less ours."""
    follower = await loadgen.Connection.open(ports[0], token)
    after = 0
    while (page := await loadgen.events_page(follower, after, wait=0))["events"]:
        after = page["next"]
    waiting: dict[tuple[str, str], asyncio.Future[float]] = {}

    async def follow() -> None:
        nonlocal after
        while True:
            page = await loadgen.events_page(follower, after, wait=5)
            seen = time.perf_counter()
            for event in page["events"]:
                if event["kind"] == "message" and event["author"] == "role:echo":
                    future = waiting.pop((event["thread_id"], event["text"]), None)
                    if future is not None and not future.done():
                        future.set_result(seen)
            after = page["next"]

    samples: list[float] = []
    per_poster = total // posters
    gap = posters / paced if paced else 0.0

    async def poster(j: int) -> None:
        connections = [await loadgen.Connection.open(port, token) for port in ports]
        spread = itertools.cycle(connections)
        owned = ids[j::posters]
        person = {k: f"person:u{ids.index(k)}" for k in owned}
        next_at = time.perf_counter() + (gap * j / posters if gap else 0)
        try:
            for n in range(per_poster):
                if gap:
                    await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                    next_at += gap
                k = owned[n % len(owned)]
                text = f"m{n} p{j}"
                reply = waiting[(k, text)] = asyncio.get_running_loop().create_future()
                body = json.dumps({"author": person[k], "text": text}).encode()
                sent = time.perf_counter()
                status, answer = await next(spread).request(f"/api/v1/threads/{k}/messages", body)
                assert status == 201, answer
                with contextlib.suppress(TimeoutError):
                    samples.append(await asyncio.wait_for(reply, REPLY_TIMEOUT) - sent)
        finally:
            for connection in connections:
                connection.close()

    async with loadgen.in_background(follow()):
        busy, ours = machine_busy_seconds(), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(poster(j) for j in range(posters)))
        seconds = time.perf_counter() - started
        cpu = (machine_busy_seconds() - busy) - (time.process_time() - ours)
    follower.close()
    return Latency.of(samples, seconds), cpu


async def _answers(url: str) -> tuple[int, int]:
    """(person messages without an echo, echoes beyond one per person message), per thread."""
    connection = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        rows = await connection.fetch(
            "SELECT thread_id, count(*) FILTER (WHERE author = 'role:echo') AS echoes,"
            " count(*) FILTER (WHERE author LIKE 'person:%') AS said"
            " FROM events WHERE kind = 'message' GROUP BY thread_id"
        )
    finally:
        await connection.close()
    unanswered = sum(max(0, r["said"] - r["echoes"]) for r in rows)
    doubled = sum(max(0, r["echoes"] - r["said"]) for r in rows)
    return unanswered, doubled


def measure_pass(
    workdir: Path,
    count: int,
    *,
    total: int,
    posters: int,
    conversations: int,
    paced: float = 0.0,
    sqlite: bool = False,
) -> Pass:
    token = secrets.token_urlsafe(24)
    label = "SQLite, 1 process" if sqlite else f"PostgreSQL, {count} replica{'s' * (count > 1)}"
    if paced:
        label += f", paced at {paced:.0f}/s"
    with contextlib.ExitStack() as stack:
        url = (
            f"sqlite+aiosqlite:///{workdir / 'sqlite.db'}"
            if sqlite
            else stack.enter_context(database())
        )
        started = stack.enter_context(replicas(workdir, url, count, token))
        ports = [port for port, _ in started]

        async def run() -> tuple[Latency, float]:
            ids = await _resolve(ports, token, conversations)
            await _load(ports, token, ids, total=conversations, posters=posters)  # first contact
            await asyncio.sleep(1.0)  # let the first-contact stragglers settle
            return await _load(ports, token, ids, total=total, posters=posters, paced=paced)

        latency, cpu = asyncio.run(run())
        unanswered, doubled = (0, 0) if sqlite else asyncio.run(_answers(url))
    return Pass(label, count, latency, cpu / max(latency.count, 1) * 1e6, unanswered, doubled)


def measure_takeover(workdir: Path, kills: int, *, timeout: float | None = None) -> list[float]:
    """Seconds from kill -9 of the replica running a turn to the new owner's reply
    (`timeout`: the replicas' `ROLECALL_REPLICA_TIMEOUT`; default, theirs)."""
    token = secrets.token_urlsafe(24)
    slow = workdir / "slow-roles"
    slow.mkdir(parents=True, exist_ok=True)
    (slow / "echo.yaml").write_text(
        "name: echo\ndisplay_name: Echo\nruntime: {kind: builtin, agent: echo, delay_ms: 500}\n"
    )
    waits: list[float] = []
    with database() as url:
        processes: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}

        def start(name: str) -> None:
            port = free_port()
            env = gateway_env(workdir / name, port, token, roles_dir=slow, database_url=url)
            env |= {"ROLECALL_REPLICA_ID": name, "ROLECALL_WIDGET_KEY": WIDGET_KEY}
            if timeout is not None:
                env["ROLECALL_REPLICA_TIMEOUT"] = str(timeout)
            process = subprocess.Popen(
                [sys.executable, "-m", "gateway", "serve"],
                cwd=ROOT,
                env={**os.environ, **env},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            processes[name] = (port, process)
            _until_ready(port)

        try:
            start("t0")
            start("t1")
            for kill in range(kills):
                waits.append(asyncio.run(_one_takeover(url, token, processes, kill)))
                start(f"t{kill + 2}")
        finally:
            for _port, process in processes.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGINT)
                    process.wait(20)
    return waits


async def _one_takeover(
    url: str, token: str, processes: dict[str, tuple[int, subprocess.Popen[bytes]]], kill: int
) -> float:
    live = {n: p for n, p in processes.items() if p[1].poll() is None}
    port = next(iter(live.values()))[0]
    connection = await loadgen.Connection.open(port, token)
    body = json.dumps({"participants": [f"person:k{kill}", "role:echo"]}).encode()
    thread = json.loads((await connection.request("/api/v1/threads", body))[1])["id"]
    text = json.dumps({"author": f"person:k{kill}", "text": "hello"}).encode()
    await connection.request(f"/api/v1/threads/{thread}/messages", text)
    db = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        while True:  # the owner, once it runs the turn
            holder = await db.fetchval(
                "SELECT l.holder FROM leases l JOIN runs r ON r.id = l.subject"
                " WHERE r.thread_id = $1 AND l.holder <> ''",
                thread,
            )
            if holder:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # into its 500 ms turn
        killed = time.perf_counter()
        live[holder][1].kill()
        live[holder][1].wait()
        replied = "SELECT count(*) FROM events WHERE thread_id = $1 AND author = 'role:echo'"
        for _ in range(int(REPLY_TIMEOUT / 0.01)):  # a poll of the database: nothing to await
            if await db.fetchval(replied, thread):
                return time.perf_counter() - killed
            await asyncio.sleep(0.01)
        raise RuntimeError(f"no reply within {REPLY_TIMEOUT:.0f} s of kill {kill}")
    finally:
        await db.close()
        connection.close()


def _until_ready(port: int) -> None:
    import urllib.request

    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def section(passes: list[Pass], takeover: list[float], *, command: str) -> list[str]:
    one = next((p for p in passes if p.replicas == 1 and "PostgreSQL" in p.label), None)
    sqlite = next((p for p in passes if "SQLite" in p.label), None)
    lines = [
        HEADING,
        "",
        f"Measured {today()} on {machine()} with `{command}`. Every replica, PostgreSQL and the "
        "load generator share the machine's two cores. Requests go to the replicas in turn, "
        "with no affinity; replies are seen on the first replica's event stream. CPU is the "
        "machine's busy time less the load generator's, per round trip.",
        "",
        "| setup | round trips/s | p50 ms | p99 ms | CPU µs/round trip | rate and CPU / 1 replica "
        "| unanswered | doubled |",
        "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for p in passes:
        ratio = ""
        if one is not None and "PostgreSQL" in p.label:
            ratio = (
                f"{p.latency.rate / one.latency.rate:.2f} and "
                f"{p.cpu_us_per_round_trip / one.cpu_us_per_round_trip:.2f}"
            )
        lines.append(
            f"| {p.label} | {p.latency.rate:,.0f} | {p.latency.p50_ms:.1f} | "
            f"{p.latency.p99_ms:.1f} | {p.cpu_us_per_round_trip:,.0f} | {ratio} | "
            f"{p.unanswered} | {p.doubled} |"
        )
    if one is not None and sqlite is not None:
        times = one.cpu_us_per_round_trip / sqlite.cpu_us_per_round_trip
        lines += [
            "",
            f"One replica on PostgreSQL uses {times:.1f} times the CPU per round trip of one "
            "process on SQLite.",
        ]
    lines += ["", *targets(passes)]
    if takeover:
        lines += [
            "",
            f"Takeover, {len(takeover)} kills (SIGKILL of the replica running a 500 ms turn, "
            "default `ROLECALL_REPLICA_TIMEOUT` of 8 s, heartbeat every 1.6 s): from the kill "
            f"to the new owner's reply p50 {statistics.median(takeover):.1f} s, max "
            f"{max(takeover):.1f} s.",
        ]
    return lines


def targets(passes: list[Pass]) -> list[str]:
    """Issue #18's targets, each said met or not by this run."""
    sqlite = next((p for p in passes if "SQLite" in p.label), None)
    by_count = {p.replicas: p for p in passes if "PostgreSQL" in p.label and "paced" not in p.label}
    paced = next((p for p in passes if "paced" in p.label), None)
    one, two = by_count.get(1), by_count.get(2)
    said = ["Targets on this two-core machine (issue #18), as this run finds them:", ""]

    def line(what: str, met: bool, found: str) -> None:
        said.append(f"- {what}: {'met' if met else 'not met'} ({found}).")

    if one is not None:
        line(
            "one replica at least 1,000 round trips/s",
            one.latency.rate >= 1000,
            f"{one.latency.rate:,.0f}/s",
        )
        if sqlite is not None:
            times = one.cpu_us_per_round_trip / sqlite.cpu_us_per_round_trip
            line(
                "one replica within 2 times SQLite's CPU per round trip",
                times <= 2,
                f"{times:.1f} times",
            )
    if one is not None and two is not None:
        line(
            "2 replicas at least as fast as one",
            two.latency.rate >= one.latency.rate,
            f"{two.latency.rate / one.latency.rate:.2f} times",
        )
        cpu = two.cpu_us_per_round_trip / one.cpu_us_per_round_trip
        line(
            "2 replicas within 1.25 times one's CPU per round trip", cpu <= 1.25, f"{cpu:.2f} times"
        )
    if paced is not None:
        line(
            "reply p99 under 50 ms at 500 round trips/s",
            paced.latency.p99_ms < 50 and paced.latency.rate >= 450,
            f"p99 {paced.latency.p99_ms:,.0f} ms at {paced.latency.rate:,.0f}/s reached",
        )
    missing = sum(p.unanswered + p.doubled for p in passes)
    line("no reply missing or doubled", missing == 0, f"{missing} in all")
    return said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=5_000)
    parser.add_argument("--posters", type=int, default=32)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--paced", type=float, default=500.0)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--write", action="store_true", help=f"write the section into {REPORT}")
    args = parser.parse_args()
    passes: list[Pass] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        common = {
            "total": args.round_trips,
            "posters": args.posters,
            "conversations": args.conversations,
        }
        passes.append(measure_pass(work / "sqlite", 1, sqlite=True, **common))
        for count in (1, 2, 3):
            passes.append(measure_pass(work / f"pg{count}", count, **common))
        if args.paced:
            passes.append(measure_pass(work / "paced", 3, paced=args.paced, **common))
        takeover = measure_takeover(work / "takeover", args.kills) if args.kills else []
    command = "python -m bench.replicas " + " ".join(sys.argv[1:])
    lines = section(passes, takeover, command=command.strip())
    print("\n".join(lines))
    if args.write:
        from bench.run_all import _with_section

        REPORT.write_text(_with_section(REPORT.read_text(), HEADING, lines))


if __name__ == "__main__":
    main()
