"""ACP agents that sleep and wake: 200 conversations, each backed by its own agent process.

Starts `rolecall serve` on a fresh SQLite file with one role, `agent`, of kind `acp`: the fake
agent of the tests (tests/runtimes/fake_acp_agent.py, `--load`, so a woken session is loaded
rather than opened anew), `idle_sleep_after: 5`, as many processes and turn slots as there are
conversations. Each prompt's newest person message is `say <words>`, which the fake writes back
as its reply (a chunk a word), no MCP call; the fake journals what it does and the seconds each
prompt took it (`answered`), so the agent's own time is known.

Three passes, each one person message to every conversation at once (posted from `POSTERS`
connections), each waited for until every reply is committed or `PASS_DEADLINE` passes:

- **first contact**: the run is created and its session started: process spawn, `initialize`,
  `session/new`, the opening prompt;
- **warm**: once every session has slept, `WARM_SAMPLE` conversations one at a time: a message
  that wakes the agent, then the measured one while its process is alive (its CPU is not told
  apart from the wake-up's);
- **wake**: after every session has slept (the agent processes, children of the gateway read
  from /proc, back to 0): spawn, `initialize`, `session/load`, the prompt.

Latency is the gateway's own: the person message's commit (`at` of its event) to the reply's
commit (`at` of the reply's event), both read from the committed-event stream
(`GET /api/v1/events`). Each turn's record (`GET /api/v1/runs/{id}/turns`) and the agent's
journal split it into stages.

    python -m bench.acp_sleep [--conversations 200] [--idle-sleep 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import loadgen
from bench.harness import ROOT, Latency, cpu_seconds, free_port, gateway_env, server

FAKE = ROOT / "tests" / "runtimes" / "fake_acp_agent.py"
ROLE = "agent"
AUTHOR = f"role:{ROLE}"
POSTERS = 16
PASS_DEADLINE = 600.0
"""Seconds a pass may wait for its replies; what has not come by then is missing."""
SLEEP_DEADLINE = 600.0
"""Seconds past `idle_sleep_after` to wait for the agent processes to end: the host puts
sessions to sleep one after another, and each ACP session's close waits for its process to exit
(up to 2 s, then SIGTERM), so 200 may take minutes."""
TURN_TIMEOUT = 900
"""The role's turn_timeout: 200 cold starts at once keep two cores busy for minutes."""
SAMPLE_EVERY = 0.1
WARM_SAMPLE = 20
"""Conversations the warm pass measures, one at a time."""

STAGES = (
    ("queued", "message committed → turn started"),
    ("spawn", "turn started → the agent's program running (spawn, interpreter, imports)"),
    ("initialize", "→ `initialize` answered by the agent"),
    ("session", "→ `session/new` or `session/load` reached the agent"),
    ("to_prompt", "→ `session/prompt` reached the agent"),
    ("agent", "the agent's own time on the prompt"),
    ("after_prompt", "the agent's answer → turn finished"),
    ("commit", "turn finished → reply committed"),
)


@dataclass(frozen=True, slots=True)
class Pass:
    name: str
    sent: int
    replied: int
    latency: Latency | None
    """Person message committed → reply committed (the gateway's `at` of both events), of the
    turns of the pass's kind (cold or warm)."""
    turn: Latency | None
    """Turn started → finished, as the turn's record says."""
    agent: Latency | None
    """The agent's own time on each prompt (its journal)."""
    stages: dict[str, float]
    """Median seconds of each of `STAGES` (those the pass went through)."""
    outcomes: dict[str, int]
    opened: dict[str, int]
    """Turns of this pass that started their agent's process, by how its session was opened:
    `new` or `loaded`."""
    seconds: float
    """First post sent → last reply seen."""
    gateway_cpu: float
    agents_cpu: float
    """CPU seconds the agent processes used during the pass (those alive at its end)."""
    cold: bool

    @property
    def missing(self) -> int:
        return self.sent - self.replied

    @property
    def overhead(self) -> float:
        """Median end-to-end latency ÷ the agent's median own time."""
        if self.latency is None or self.agent is None or self.agent.p50_ms == 0:
            return float("nan")
        return self.latency.p50_ms / self.agent.p50_ms


@dataclass(frozen=True, slots=True)
class Result:
    conversations: int
    idle_sleep_after: float
    first: Pass
    warm: Pass
    wake: Pass
    peak_processes: int
    """The most agent processes alive at once (sampled every `SAMPLE_EVERY` s)."""
    alive_after_replies: int
    """Agent processes alive once the warm pass's replies were all in."""
    alive_after_sleep: int
    asleep_after: float
    """Seconds from the warm pass's last reply until no agent process was alive (or gave up)."""
    sessions_after_sleep: dict[str, int]
    agent_rss: int
    """Bytes: the agent processes' summed VmRSS at the warm pass's end."""
    fake_start: float
    """Seconds one fake agent takes to start alone (interpreter and imports), measured apart."""


class Processes:
    """The gateway's living children (its agent processes), sampled until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0

    def alive(self) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.pid and fields[0] != "Z":
                    found.append(int(entry))
        self.peak = max(self.peak, len(found))
        return found

    def rss(self) -> int:
        total = 0
        for pid in self.alive():
            with contextlib.suppress(OSError, AttributeError):
                status = Path(f"/proc/{pid}/status").read_text()
                total += int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1)) * 1024  # type: ignore[union-attr]
        return total

    def cpu(self) -> float:
        """CPU seconds the living agent processes have used so far."""
        total = 0.0
        for pid in self.alive():
            with contextlib.suppress(OSError):
                total += cpu_seconds(pid)
        return total

    @contextlib.asynccontextmanager
    async def sampled(self) -> AsyncIterator[Processes]:
        async def sample() -> None:
            while True:
                self.alive()
                await asyncio.sleep(SAMPLE_EVERY)

        async with loadgen.in_background(sample()):
            yield self


class Replies:
    """Follows the committed-event stream: the agent's replies, by thread."""

    def __init__(self, connection: loadgen.Connection, after: int) -> None:
        self._connection, self._after = connection, after
        self._waiting: dict[str, int] = {}
        """thread id → the position of the person message waiting for its reply."""
        self.seen: dict[str, dict[str, Any]] = {}
        self._early: dict[str, dict[str, Any]] = {}
        """Replies seen before their message's 201 was read."""
        self.last_seen = 0.0
        self._all = asyncio.Event()

    @classmethod
    async def open(cls, port: int, token: str) -> Replies:
        connection = await loadgen.Connection.open(port, token)
        after = 0
        while (page := await loadgen.events_page(connection, after, wait=0))["events"]:
            after = page["next"]
        return cls(connection, after)

    def expect(self, message: dict[str, Any]) -> None:
        thread = message["thread_id"]
        early = self._early.pop(thread, None)
        if early is not None and early["position"] > message["position"]:
            self._seen(early)
        else:
            self._waiting[thread] = message["position"]

    def _seen(self, reply: dict[str, Any]) -> None:
        self.seen[reply["thread_id"]] = reply
        self.last_seen = time.perf_counter()
        self._all.set()

    def start_pass(self) -> None:
        self.seen, self._waiting, self._early = {}, {}, {}

    async def all_in(self, count: int, deadline: float) -> None:
        with contextlib.suppress(TimeoutError):
            while len(self.seen) < count:
                self._all.clear()
                await asyncio.wait_for(self._all.wait(), max(deadline - time.monotonic(), 0.01))

    async def follow(self) -> None:
        while True:
            page = await loadgen.events_page(self._connection, self._after, wait=5)
            for event in page["events"]:
                if event["kind"] != "message" or event["author"] != AUTHOR:
                    continue
                waiting = self._waiting.get(event["thread_id"])
                if waiting is None:
                    self._early[event["thread_id"]] = event
                elif event["position"] > waiting:
                    del self._waiting[event["thread_id"]]
                    self._seen(event)
            self._after = page["next"]

    @contextlib.asynccontextmanager
    async def following(self) -> AsyncIterator[Replies]:
        try:
            async with loadgen.in_background(self.follow()):
                yield self
        finally:
            self._connection.close()


async def _get(port: int, token: str, path: str) -> Any:
    connection = await loadgen.Connection.open(port, token)
    try:
        status, body = await connection.request(path, b"")
    finally:
        connection.close()
    assert status == 200, (status, body[:200])
    return json.loads(body)


def role_dir(directory: Path, journal: Path, conversations: int, idle_sleep_after: float) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{ROLE}.yaml").write_text(
        f"name: {ROLE}\n"
        "display_name: Agent\n"
        "instructions: Answer briefly.\n"
        "runtime:\n"
        "  kind: acp\n"
        f"  command: {json.dumps(sys.executable)}\n"
        f"  args: [{json.dumps(str(FAKE))}, --load]\n"
        f"  env: {{FAKE_ACP_JOURNAL: {json.dumps(str(journal))}}}\n"
        "  permissions: deny\n"
        f"  max_processes: {conversations + 16}\n"
        f"max_concurrent_turns: {conversations + 16}\n"
        f"idle_sleep_after: {idle_sleep_after}\n"
        f"turn_timeout: {TURN_TIMEOUT}\n"
    )
    return directory


async def resolve(port: int, token: str, count: int) -> list[str]:
    connection = await loadgen.Connection.open(port, token)
    ids = []
    try:
        for i in range(count):
            body = json.dumps({"participants": [f"person:u{i}", AUTHOR]}).encode()
            status, answer = await connection.request("/api/v1/threads", body)
            assert status == 201, (status, answer)
            ids.append(json.loads(answer)["id"])
    finally:
        connection.close()
    return ids


async def post_all(
    port: int, token: str, ids: Sequence[str], tag: str, replies: Replies
) -> dict[str, dict[str, Any]]:
    """One person message to every conversation; the committed messages by thread."""
    messages: dict[str, dict[str, Any]] = {}

    async def poster(j: int) -> None:
        connection = await loadgen.Connection.open(port, token)
        try:
            for k in range(j, len(ids), POSTERS):
                body = json.dumps({"author": f"person:u{k}", "text": f"say {tag} {k}"}).encode()
                status, answer = await connection.request(
                    f"/api/v1/threads/{ids[k]}/messages", body
                )
                assert status == 201, (status, answer)
                message = json.loads(answer)
                replies.expect(message)
                messages[ids[k]] = message
        finally:
            connection.close()

    await asyncio.gather(*(poster(j) for j in range(min(POSTERS, len(ids)))))
    return messages


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _journal(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _latency(samples: Sequence[float], seconds: float) -> Latency | None:
    return Latency.of(samples, seconds) if samples else None


@dataclass(frozen=True, slots=True)
class _Sent:
    name: str
    tag: str
    messages: dict[str, dict[str, Any]]
    replies: dict[str, dict[str, Any]]
    seconds: float
    gateway_cpu: float
    agents_cpu: float
    cold: bool
    """Every turn starts its agent's process; else the turns that did are left out of the
    latencies and stages (they are counted in `opened`)."""


def _pass(
    sent: _Sent, turns: dict[str, dict[str, Any]], journal: list[dict[str, Any]], ids: list[str]
) -> Pass:
    """Put the pass's numbers together from its messages, replies, turns and the journal."""
    by_pid: dict[int, dict[str, dict[str, Any]]] = {}
    prompts: dict[str, dict[str, Any]] = {}
    answers: dict[str, dict[str, Any]] = {}
    for entry in journal:
        by_pid.setdefault(entry["pid"], {}).setdefault(entry["event"], entry)
        if entry["event"] in ("prompt", "answered") and entry.get("said", "").startswith(
            f"say {sent.tag} "
        ):
            k = int(entry["said"].rsplit(" ", 1)[1])
            (prompts if entry["event"] == "prompt" else answers)[ids[k]] = entry
    stages: dict[str, list[float]] = {name: [] for name, _ in STAGES}
    latencies, durations, agent, opened = [], [], [], Counter[str]()
    for thread, message in sent.messages.items():
        turn, prompt, answer = turns.get(thread), prompts.get(thread), answers.get(thread)
        reply = sent.replies.get(thread)
        process = by_pid.get(prompt["pid"], {}) if prompt else {}
        spawned = turn is not None and process.get("start", {}).get("at", 0) >= _at(
            turn["started_at"]
        )
        if spawned:
            opened["loaded" if process.get("load_session", {}).get("found") else "new"] += 1
        if not sent.cold and spawned:
            continue  # a warm pass's turn that found its session asleep: counted apart
        if reply is not None:
            latencies.append(_at(reply["at"]) - _at(message["at"]))
        if answer is not None:
            agent.append(answer["seconds"])
            stages["agent"].append(answer["seconds"])
        if turn is None:
            continue
        started, finished = _at(turn["started_at"]), _at(turn["finished_at"])
        durations.append(finished - started)
        stages["queued"].append(started - _at(message["at"]))
        if reply is not None:
            stages["commit"].append(_at(reply["at"]) - finished)
        if answer is not None:
            stages["after_prompt"].append(finished - answer["at"])
        if prompt is None:
            continue
        session = process.get("load_session") or process.get("new_session")
        if spawned:
            stages["spawn"].append(process["start"]["at"] - started)
            if "initialize" in process and session is not None:
                stages["initialize"].append(process["initialize"]["at"] - process["start"]["at"])
                stages["session"].append(session["at"] - process["initialize"]["at"])
                stages["to_prompt"].append(prompt["at"] - session["at"])
        else:
            stages["to_prompt"].append(prompt["at"] - started)
    seconds = sent.seconds
    return Pass(
        name=sent.name,
        sent=len(sent.messages),
        replied=len(sent.replies),
        latency=_latency(latencies, seconds),
        turn=_latency(durations, seconds),
        agent=_latency(agent, seconds),
        stages={name: _median(v) for name, v in stages.items() if v},
        outcomes=dict(Counter(t["outcome"] for t in turns.values())),
        opened=dict(opened),
        seconds=seconds,
        gateway_cpu=sent.gateway_cpu,
        agents_cpu=sent.agents_cpu,
        cold=sent.cold,
    )


async def _send(
    name: str,
    tag: str,
    port: int,
    token: str,
    ids: list[str],
    replies: Replies,
    procs: Processes,
    *,
    cold: bool,
) -> _Sent:
    replies.start_pass()
    cpu, children = cpu_seconds(procs.pid), procs.cpu()
    began = time.perf_counter()
    messages = await post_all(port, token, ids, tag, replies)
    await replies.all_in(len(ids), time.monotonic() + PASS_DEADLINE)
    seconds = (replies.last_seen or time.perf_counter()) - began
    return _Sent(
        name,
        tag,
        messages,
        dict(replies.seen),
        seconds,
        cpu_seconds(procs.pid) - cpu,
        procs.cpu() - children,
        cold,
    )


async def _probe_warm(
    tag: str, port: int, token: str, ids: list[str], replies: Replies, sample: int
) -> _Sent:
    """The warm pass, on `sample` conversations one at a time, on a quiet machine: a message
    that wakes the conversation's agent, then — as soon as its reply is in, the process alive —
    the measured one. (Sent to all at once, straight after first contact, the turns would find
    their sessions asleep: 200 cold starts keep both cores busy far longer than idle sleep.)"""
    messages: dict[str, dict[str, Any]] = {}
    seen: dict[str, dict[str, Any]] = {}
    connection = await loadgen.Connection.open(port, token)
    began = time.perf_counter()
    try:
        for k, thread in enumerate(ids[:sample]):
            for text in (f"say wake-up {k}", f"say {tag} {k}"):
                replies.start_pass()
                body = json.dumps({"author": f"person:u{k}", "text": text}).encode()
                status, answer = await connection.request(
                    f"/api/v1/threads/{thread}/messages", body
                )
                assert status == 201, (status, answer)
                message = json.loads(answer)
                replies.expect(message)
                await replies.all_in(1, time.monotonic() + PASS_DEADLINE)
            messages[thread] = message
            if thread in replies.seen:
                seen[thread] = replies.seen[thread]
    finally:
        connection.close()
    nan = float("nan")
    return _Sent("warm", tag, messages, seen, time.perf_counter() - began, nan, nan, False)


def _turns_told(
    sent: _Sent, ids: list[str], turns: list[list[dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """Each conversation's turn that was told the pass's message."""
    told = {}
    for k, thread in enumerate(ids):
        message = sent.messages.get(thread)
        turn = _turn_of(turns[k], message["text"]) if message else None
        if turn is not None:
            told[thread] = turn
    return told


async def _all_asleep(procs: Processes, idle_sleep_after: float) -> None:
    """Wait until no agent process is left (or give up after idle sleep and `SLEEP_DEADLINE`)."""
    deadline = time.monotonic() + idle_sleep_after + SLEEP_DEADLINE
    while True:
        if not procs.alive() or time.monotonic() > deadline:
            return
        await asyncio.sleep(SAMPLE_EVERY)


def _turn_of(turns: list[dict[str, Any]], text: str) -> dict[str, Any] | None:
    """The turn that was told the person message `text`."""
    for turn in turns:
        if any(event.get("text") == text for event in turn["prompt"].get("news", ())):
            return turn
    return None


async def _turns(port: int, token: str, ids: list[str]) -> list[list[dict[str, Any]]]:
    """Each conversation's finished turns, oldest first."""
    found = []
    for thread in ids:
        runs = (await _get(port, token, f"/api/v1/runs?thread={thread}"))["runs"]
        turns: list[dict[str, Any]] = []
        for run in runs:
            turns += (await _get(port, token, f"/api/v1/runs/{run['id']}/turns"))["turns"]
        found.append(sorted(turns, key=lambda t: t["number"]))
    return found


def _fake_start() -> float:
    """Seconds the fake agent's program takes to start alone: a fresh interpreter and its
    imports, up to its main()."""
    code = (
        "import runpy, sys, time; t = time.perf_counter(); sys.argv = ['fake']; "
        f"runpy.run_path({str(FAKE)!r}, run_name='fake'); print(time.perf_counter() - t)"
    )
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - began


def measure(workdir: Path, conversations: int = 200, idle_sleep_after: float = 5.0) -> Result:
    workdir.mkdir(parents=True, exist_ok=True)
    port, token = free_port(), secrets.token_urlsafe(24)
    journal = workdir / "journal.jsonl"
    roles = role_dir(workdir / "roles", journal, conversations, idle_sleep_after)
    env = gateway_env(workdir, port, token, roles_dir=roles)
    fake_start = _fake_start()
    with server(["-m", "gateway", "serve"], port=port, env=env) as process:
        procs = Processes(process.pid)

        async def run() -> Result:
            ids = await resolve(port, token, conversations)
            async with (
                (await Replies.open(port, token)).following() as replies,
                procs.sampled(),
            ):
                first = await _send(
                    "first contact", "hello", port, token, ids, replies, procs, cold=True
                )
                await _all_asleep(procs, idle_sleep_after)
                warm = await _probe_warm("again", port, token, ids, replies, WARM_SAMPLE)
                ended = time.perf_counter()
                alive_after = len(procs.alive())
                agent_rss = procs.rss()
                deadline = time.monotonic() + idle_sleep_after + SLEEP_DEADLINE
                while True:
                    alive = len(procs.alive())
                    if not alive or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(SAMPLE_EVERY)
                asleep_after = time.perf_counter() - ended
                metrics = await _sessions(port, token)
                wake = await _send("wake", "wake", port, token, ids, replies, procs, cold=True)
            turns = await _turns(port, token, ids)
            entries = _journal(journal)
            first_pass, warm_pass, wake_pass = (
                _pass(sent, _turns_told(sent, ids, turns), entries, ids)
                for sent in (first, warm, wake)
            )
            return Result(
                conversations,
                idle_sleep_after,
                first_pass,
                warm_pass,
                wake_pass,
                peak_processes=procs.peak,
                alive_after_replies=alive_after,
                alive_after_sleep=alive,
                asleep_after=asleep_after,
                sessions_after_sleep=metrics,
                agent_rss=agent_rss,
                fake_start=fake_start,
            )

        return asyncio.run(run())


async def _sessions(port: int, token: str) -> dict[str, int]:
    connection = await loadgen.Connection.open(port, token)
    try:
        status, body = await connection.request("/metrics", b"")
    finally:
        connection.close()
    assert status == 200, status
    found = re.findall(rb'^rolecall_sessions\{state="(\w+)"\} ([0-9.e+]+)$', body, re.M)
    return {state.decode(): int(float(value)) for state, value in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--idle-sleep", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = measure(Path(tmp), args.conversations, args.idle_sleep)
    for p in (result.first, result.warm, result.wake):
        lat = p.latency
        print(
            f"{p.name:14} replied {p.replied}/{p.sent}  "
            + (f"p50 {lat.p50_ms:,.0f} ms p99 {lat.p99_ms:,.0f} ms  " if lat else "")
            + f"agent p50 {p.agent.p50_ms if p.agent else float('nan'):.2f} ms  "
            f"x{p.overhead:,.0f}  {p.seconds:.1f} s  outcomes {p.outcomes} opened {p.opened}"
        )
        print("   stages ms: " + ", ".join(f"{k} {v * 1000:,.1f}" for k, v in p.stages.items()))
    print(
        f"processes: peak {result.peak_processes}, after replies {result.alive_after_replies}, "
        f"after sleep {result.alive_after_sleep} ({result.asleep_after:.1f} s); "
        f"sessions {result.sessions_after_sleep}; agents' RSS {result.agent_rss / 2**20:,.0f} MiB"
    )


if __name__ == "__main__":
    main()
