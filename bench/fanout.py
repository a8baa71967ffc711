"""Task fan-out: one task with 1,000 subscribed conversations changes; every run is prompted.

In process on a fresh SQLite file, with the run host of `rolecall serve` (default limits: 64 turn
slots) and one role, `watch`: a built-in agent of this benchmark's own that writes down the
monotonic time at which each prompt arrives — per run, for each task event in the prompt's task
digest and each person message in its news — answers people's messages with their text and says
nothing on task news.

Setup: `conversations` conversations {person:uN, role:watch}, one message each, answered (so every
run exists and its session is awake); one task, made by a person, to which every run subscribes.
Then, in alternating rounds:

- task: one person changes the task's status (open → in_progress → open …; one `db.tasks.update`).
  Latency runs from the update call returning (the change committed) to each run's prompt
  carrying the change;
- message (the ceiling: the same fan-out through the message path): one message from each
  conversation's person, all posted at once. Latency runs from each post returning (its commit)
  to its run's prompt; the round's total from the first post being sent.

After each round the benchmark waits until every run's cursor is past the news (the turns'
ends committed), so rounds do not overlap. The setup and the rounds have `BUDGET` seconds in all.

    python -m bench.fanout [--conversations 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, cast

from bench.harness import Latency
from core.engine.host import HostLimits, RunHost
from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent
from core.engine.runtimes.registry import Runtimes
from core.model.participants import Address, ParticipantSet
from core.model.roles import BuiltinRuntime, Role
from core.model.runs.run import Run
from core.model.tasks import Actor, TaskChange, TaskId, TaskStatus
from core.model.timeline import ThreadId
from core.storage.database import Database, open_database, upgrade_schema

ROLE = "watch"
OWNER = Actor.person(Address("person:owner"))
LIMITS = HostLimits()
"""The host's defaults (`ROLECALL_MAX_TURNS` is `slots`: 64 turns at once)."""
MAX_CONCURRENT_TURNS = LIMITS.slots
"""The role's own limit (default 8) raised to the host's, so the host's slots are the limit."""
BUDGET = 100.0
"""Seconds the setup and the rounds may take in all: a wait that reaches it gives up (the runs
not prompted are counted), and no round starts after it."""
SETTLE_POLL = 0.02

TASK, MESSAGE = "task", "message"


class Arrivals:
    """When each run was prompted with each piece of news: token -> run id -> monotonic times."""

    def __init__(self) -> None:
        self.times: dict[str, dict[str, list[float]]] = {}
        self._waiting: tuple[str, int, asyncio.Event] | None = None

    def note(self, token: str, run_id: str, at: float) -> None:
        runs = self.times.setdefault(token, {})
        runs.setdefault(run_id, []).append(at)
        if self._waiting and self._waiting[0] == token and len(runs) >= self._waiting[1]:
            self._waiting[2].set()

    async def wait(self, token: str, count: int, until: float) -> bool:
        """Until `count` runs have been prompted with `token`; False when the monotonic time
        `until` came first."""
        reached = asyncio.Event()
        self._waiting = (token, count, reached)
        if len(self.times.get(token, {})) >= count:
            reached.set()
        try:
            async with asyncio.timeout(max(until - time.monotonic(), 0)):
                await reached.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting = None


class Watch(BuiltinAgent):
    """Writes down when each piece of news reaches its run; answers people, silent on news."""

    name = "watch"
    arrivals: ClassVar[Arrivals]

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        now, run = time.monotonic(), self.spec.run_id
        for task in prompt.tasks:
            for event in task["events"]:
                self.arrivals.note(f"{TASK} {event['seq']}", run, now)
        for event in prompt.news:
            from_a_person = event.author is not None and event.author.startswith("person:")
            if event.kind == "message" and from_a_person and not event.retracted:
                self.arrivals.note(f"{MESSAGE} {event.text}", run, now)
                yield Reply(event.text or "")


def watch_agent(arrivals: Arrivals) -> type[BuiltinAgent]:
    """A `Watch` class of its own writing to `arrivals`."""
    return cast(type[BuiltinAgent], type("Watch", (Watch,), {"arrivals": arrivals}))


@dataclass(frozen=True, slots=True, kw_only=True)
class Round:
    kind: str
    number: int
    change_seconds: float
    """task: the update call (sent to committed); message: sending all posts until the last
    returned."""
    started: float
    """Monotonic time latency counts from for the round's total: the update returning (task),
    the first post being sent (message)."""
    committed: dict[str, float]
    """Per run: when its news was committed (as its caller saw it)."""
    settled_seconds: float
    """From `started` until every run's cursor was past the news (turn ends committed)."""
    cpu_seconds: float
    """The process's CPU time (all threads) from sending the change until every run was
    prompted."""
    token: str
    arrivals: dict[str, list[float]] = field(repr=False)

    @property
    def delivered(self) -> int:
        return len(self.arrivals)

    @property
    def twice(self) -> int:
        """Runs prompted with this news more than once."""
        return sum(len(times) > 1 for times in self.arrivals.values())

    @property
    def total_seconds(self) -> float:
        """From `started` until the last run was prompted (of those that were)."""
        return max((times[0] for times in self.arrivals.values()), default=self.started) - (
            self.started
        )

    @property
    def first_seconds(self) -> float:
        return min((times[0] for times in self.arrivals.values()), default=self.started) - (
            self.started
        )

    @property
    def cpu_us_per_prompt(self) -> float:
        return self.cpu_seconds / max(self.delivered, 1) * 1e6

    @property
    def latency(self) -> Latency:
        """Per run: from its news being committed to its prompt."""
        samples = [times[0] - self.committed[run] for run, times in self.arrivals.items()]
        return Latency.of(samples or [float("nan")], self.total_seconds)

    @property
    def rate(self) -> float:
        """Runs prompted per second, over the round's total."""
        return self.delivered / self.total_seconds if self.total_seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Result:
    conversations: int
    setup_seconds: float
    rounds: list[Round]
    limits: HostLimits
    max_concurrent_turns: int

    def of(self, kind: str) -> list[Round]:
        return [r for r in self.rounds if r.kind == kind]

    def median(self, kind: str, value: Callable[[Round], float]) -> float:
        return statistics.median(value(r) for r in self.of(kind))

    @property
    def missing(self) -> int:
        return sum(self.conversations - r.delivered for r in self.rounds)

    @property
    def twice(self) -> int:
        return sum(r.twice for r in self.rounds)


async def _runs(db: Database) -> list[Run]:
    runs: list[Run] = []
    while page := await db.runs.of_role(ROLE, after=runs[-1].id if runs else None, limit=500):
        runs += page
    return runs


async def _settle(db: Database, past: Callable[[Run], bool], count: int, until: float) -> bool:
    """Until every run of the role is `past` its news (its turn's end committed); False when
    the monotonic time `until` came first."""
    while time.monotonic() < until:
        runs = await _runs(db)
        if len(runs) == count and all(past(run) for run in runs):
            return True
        await asyncio.sleep(SETTLE_POLL)
    return False


async def _fan_out(url: str, conversations: int, rounds: int) -> Result:
    arrivals = Arrivals()
    role = Role(
        name=ROLE,
        display_name="Watch",
        runtime=BuiltinRuntime(kind="builtin", agent="watch"),
        max_concurrent_turns=MAX_CONCURRENT_TURNS,
    )
    db = await open_database(url)
    runtimes = Runtimes({**AGENTS, "watch": watch_agent(arrivals)})
    host = RunHost(db, {ROLE: role}, runtimes, limits=LIMITS)
    await host.start()
    try:
        began = time.monotonic()
        until = began + BUDGET
        people = [Address(f"person:u{n}") for n in range(conversations)]
        resolved = await asyncio.gather(
            *(db.threads.resolve(ParticipantSet.of([p, f"role:{ROLE}"])) for p in people)
        )
        threads = [thread.id for thread, _ in resolved]
        hello = await asyncio.gather(
            *(db.threads.post_message(t, p, "hello") for t, p in zip(threads, people, strict=True))
        )
        if not await arrivals.wait(f"{MESSAGE} hello", conversations, until):
            raise RuntimeError("not every conversation was prompted with its first message")
        seq_of = {message.thread_id: message.seq for message in hello}
        if not await _settle(
            db,
            lambda run: run.cursor >= seq_of[ThreadId(run.thread_id or "")],
            conversations,
            until,
        ):
            raise RuntimeError("not every conversation's first turn ended")
        runs = await _runs(db)
        run_of: dict[ThreadId, str] = {ThreadId(r.thread_id or ""): r.id for r in runs}
        task, _ = await db.tasks.create(
            title="Fan-out", body="", assignee=None, external=None, actor=OWNER
        )
        subscribed = await asyncio.gather(
            *(db.subscriptions.subscribe(r.id, task.id) for r in runs)
        )
        assert all(subscribed)
        setup = time.monotonic() - began

        measured: list[Round] = []
        for number in range(1, rounds + 1):
            if number > 1 and time.monotonic() >= until:
                break
            measured.append(await _task_round(db, arrivals, task.id, number, run_of, until))
            measured.append(
                await _message_round(db, arrivals, number, threads, people, run_of, until)
            )
        await asyncio.sleep(0.2)  # a run prompted twice would be by now
        measured = [replace(r, arrivals=dict(arrivals.times.get(r.token, {}))) for r in measured]
        return Result(conversations, setup, measured, LIMITS, MAX_CONCURRENT_TURNS)
    finally:
        await host.stop()
        await db.close()


async def _task_round(
    db: Database,
    arrivals: Arrivals,
    task_id: TaskId,
    number: int,
    run_of: dict[ThreadId, str],
    until: float,
) -> Round:
    status = TaskStatus.IN_PROGRESS if number % 2 else TaskStatus.OPEN
    cpu, sent = time.process_time(), time.monotonic()
    _, event = await db.tasks.update(task_id, TaskChange(status=status), OWNER)
    committed = time.monotonic()
    assert event is not None
    token = f"{TASK} {event.seq}"
    await arrivals.wait(token, len(run_of), until)
    cpu = time.process_time() - cpu
    await _settle(db, lambda run: run.task_cursor >= event.position, len(run_of), until)
    return Round(
        kind=TASK,
        number=number,
        change_seconds=committed - sent,
        started=committed,
        committed=dict.fromkeys(run_of.values(), committed),
        settled_seconds=time.monotonic() - committed,
        cpu_seconds=cpu,
        token=token,
        arrivals={},
    )


async def _message_round(
    db: Database,
    arrivals: Arrivals,
    number: int,
    threads: Sequence[ThreadId],
    people: Sequence[Address],
    run_of: dict[ThreadId, str],
    until: float,
) -> Round:
    text = f"ping {number}"
    committed: dict[str, float] = {}
    seqs: dict[str, int] = {}

    async def post(thread: ThreadId, person: Address) -> None:
        message = await db.threads.post_message(thread, person, text)
        committed[run_of[thread]] = time.monotonic()
        seqs[run_of[thread]] = message.seq

    cpu, sent = time.process_time(), time.monotonic()
    await asyncio.gather(*(post(t, p) for t, p in zip(threads, people, strict=True)))
    change = time.monotonic() - sent
    token = f"{MESSAGE} {text}"
    await arrivals.wait(token, len(threads), until)
    cpu = time.process_time() - cpu
    await _settle(db, lambda run: run.cursor >= seqs[run.id], len(threads), until)
    return Round(
        kind=MESSAGE,
        number=number,
        change_seconds=change,
        started=sent,
        committed=committed,
        settled_seconds=time.monotonic() - sent,
        cpu_seconds=cpu,
        token=token,
        arrivals={},
    )


def measure(conversations: int = 1_000, rounds: int = 5) -> Result:
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'fanout.db'}"
        asyncio.run(upgrade_schema(url))
        return asyncio.run(_fan_out(url, conversations, rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = measure(args.conversations, args.rounds)
    print(f"setup {result.setup_seconds:.1f} s")
    for r in result.rounds:
        latency = r.latency
        print(
            f"{r.kind:7} {r.number}  change {r.change_seconds * 1000:7.1f} ms  "
            f"first {r.first_seconds * 1000:7.1f} ms  all {r.total_seconds * 1000:7.1f} ms  "
            f"p50 {latency.p50_ms:7.1f} ms  p99 {latency.p99_ms:7.1f} ms  "
            f"settled {r.settled_seconds * 1000:7.1f} ms  "
            f"cpu/prompt {r.cpu_us_per_prompt:5.0f} µs  "
            f"delivered {r.delivered}  twice {r.twice}"
        )
    ratio = result.median(TASK, lambda r: r.total_seconds) / result.median(
        MESSAGE, lambda r: r.total_seconds
    )
    print(f"task ÷ message (median time until every run was prompted): {ratio:.2f}")


if __name__ == "__main__":
    main()
