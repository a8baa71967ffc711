"""Memory of idle conversations: 10,000 echo conversations, used once each, awake or asleep.

Two runs of `rolecall serve`, each on a fresh SQLite file with one role, `echo`:

- awake: the manifest says `idle_sleep_after: 86400`, so every session stays held;
- asleep: `idle_sleep_after: 1`, so every session is put to sleep a second after its turn.

Each run resolves `conversations` conversations {person:uN, role:echo}, then posts one message
to each (32 posters, as in `bench.roundtrip`) and waits for every echo on the committed-event
stream, then waits until `GET /metrics` shows `rolecall_sessions{state="awake"}` at the count
(awake run) or at 0 (asleep run), and reads the server process's memory from /proc: VmRSS from
`status`, and PSS and USS (private clean + private dirty) from `smaps_rollup`. The same readings
are taken of the fresh server (baseline) and after resolving the conversations, before any
message.

    python -m bench.sleep_memory [--conversations 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import loadgen, roundtrip
from bench.harness import echo_role, free_port, gateway_env, server

AWAKE_IDLE_SLEEP = 86_400
ASLEEP_IDLE_SLEEP = 1
POSTERS = 32
SETTLE_DEADLINE = 120.0
"""Seconds to wait for the sessions gauge to reach its target."""


@dataclass(frozen=True, slots=True)
class Memory:
    rss: int
    """Bytes: VmRSS from /proc/PID/status."""
    pss: int
    uss: int

    @classmethod
    def of(cls, pid: int) -> Memory:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))  # type: ignore[union-attr]
        rollup = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, _, rest = line.partition(":")
            fields = rest.split()
            if fields and fields[0].isdigit():
                rollup[name] = int(fields[0])
        uss = rollup.get("Private_Clean", 0) + rollup.get("Private_Dirty", 0)
        return cls(rss * 1024, rollup.get("Pss", 0) * 1024, uss * 1024)


@dataclass(frozen=True, slots=True)
class Run:
    conversations: int
    baseline: Memory
    """The fresh server."""
    resolved: Memory
    """After resolving the conversations, before any message."""
    used: Memory
    """After one round trip each, once the sessions gauge shows the run's target."""
    sessions_awake: int
    sessions_asleep: int
    seconds: float
    """Resolving, one round trip each, and waiting for the gauge."""
    missing: int

    @property
    def per_conversation(self) -> float:
        """RSS bytes per conversation over the fresh server's."""
        return (self.used.rss - self.baseline.rss) / self.conversations


async def _sessions(port: int) -> dict[str, int]:
    connection = await loadgen.Connection.open(port)
    try:
        status, body = await connection.request("/metrics", b"")
    finally:
        connection.close()
    assert status == 200, status
    found = re.findall(rb'^rolecall_sessions\{state="(\w+)"\} ([0-9.e+]+)$', body, re.M)
    return {state.decode(): int(float(value)) for state, value in found}


def measure_run(workdir: Path, conversations: int, *, awake: bool) -> Run:
    """One server: every session held (`awake`) or every session put to sleep."""
    port, token = free_port(), secrets.token_urlsafe(24)
    idle_sleep_after = AWAKE_IDLE_SLEEP if awake else ASLEEP_IDLE_SLEEP
    roles = echo_role(workdir / "roles", idle_sleep_after=idle_sleep_after)
    env = gateway_env(workdir, port, token, roles_dir=roles)
    awake_target = conversations if awake else 0
    with server(["-m", "gateway", "serve"], port=port, env=env) as process:
        baseline = Memory.of(process.pid)

        async def load() -> tuple[Memory, roundtrip.RoundTrips, dict[str, int]]:
            ids = await roundtrip.resolve(port, token, conversations)
            resolved = Memory.of(process.pid)
            async with (await roundtrip.Replies.open(port, token)).following() as replies:
                used = await roundtrip.round_trips(
                    port, token, replies, ids, total=conversations, posters=POSTERS,
                    tag="hello", pid=process.pid,
                )  # fmt: skip
            deadline = time.monotonic() + SETTLE_DEADLINE
            while (sessions := await _sessions(port)).get("awake") != awake_target:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"sessions never settled at {awake_target} awake: {sessions}"
                    )
                await asyncio.sleep(0.25)
            return resolved, used, sessions

        started = time.perf_counter()
        resolved, used, sessions = asyncio.run(load())
        seconds = time.perf_counter() - started
        return Run(
            conversations,
            baseline,
            resolved,
            Memory.of(process.pid),
            sessions.get("awake", -1),
            sessions.get("asleep", -1),
            seconds,
            used.missing,
        )


def measure(workdir: Path, conversations: int) -> dict[str, Run]:
    return {
        "awake": measure_run(workdir / "awake", conversations, awake=True),
        "asleep": measure_run(workdir / "asleep", conversations, awake=False),
    }


def mib(size: float) -> str:
    return f"{size / 2**20:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        runs = measure(Path(tmp), args.conversations)
    for name, run in runs.items():
        print(
            f"{name:6} baseline {mib(run.baseline.rss)} MiB  resolved {mib(run.resolved.rss)} MiB  "
            f"used {mib(run.used.rss)} MiB (PSS {mib(run.used.pss)}, USS {mib(run.used.uss)})  "
            f"{run.per_conversation:,.0f} B/conversation  sessions awake {run.sessions_awake} "
            f"asleep {run.sessions_asleep}  {run.seconds:.0f} s  missing {run.missing}"
        )
    saved = (runs["awake"].used.rss - runs["asleep"].used.rss) / args.conversations
    print(f"asleep saves {saved:,.0f} B of RSS per conversation")


if __name__ == "__main__":
    main()
