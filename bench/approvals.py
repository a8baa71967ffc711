"""Approvals: 1,000 pending questions answered at once over HTTP, every waiting turn resumed once.

`rolecall serve` on a fresh SQLite file (or, with `--postgres`, a PostgreSQL database made for
the run and dropped after it) with one role, `asker`, of runtime kind `openai` (`stream: false`,
the default `max_concurrent_turns: 8`), whose model is `bench/fake_model.py` on 127.0.0.1: to a
person's message it answers with one call of the `ask` tool (`Go ahead?`, Yes or No, expiring in
an hour); to the result of that call, with a reply saying what was answered.

1. **Asking.** `conversations` conversations {person:uK, role:asker} get one message each. The
   benchmark waits until every question is pending — seen as `approval_requested` on the
   committed-event stream (`GET /api/v1/events`) and listed by
   `GET /api/v1/threads/{id}/approvals?state=pending` — and reads `GET /metrics` (and, on
   PostgreSQL, the slots' advisory locks in `pg_locks`): every turn waits, and, each having
   lent its slots back, no turn slot is held.
2. **Answering.** Every approval is answered `yes` by its conversation's person
   (`POST /api/v1/approvals/{id}`) from `CONNECTIONS` keep-alive connections opened beforehand,
   as fast as they are answered. The first wave is `double_clicks` approvals answered twice
   at the same moment, on two connections. Measured: the first POST to the last 200; the first
   POST until the stream shows every turn's reply; each approval's resolution → its reply
   (the `at` of both events).
3. **Exactly once** (`bench.approvals_checks`). Every approval has exactly one
   `approval_resolved` (answered, by its person), every double click got one 200 and one 409,
   and every conversation one question and one reply. Then `SECOND_ANSWERS` approvals are
   answered again, all at once with nothing else running: each must be 409 `approval_closed`,
   and a marker message posted after them must be the only event past them.
4. **Ordinary turns** (the gateway's own ceiling): one message with `PLAIN` to every
   conversation, which the model answers at once; first post to the last reply. Then every
   turn's record (`GET /api/v1/runs/{id}/turns`) says where the time went (`STAGES`), and
   `/metrics` that every turn replied, none failed, and no slot is held.

The ceilings for the answers, in the same run after the gateway stopped: the same requests from
the same connections to `bench/ceiling_server.py`, with one INSERT and COMMIT per request
(WAL, synchronous=FULL) and with no database. Any count that is wrong, any 5xx, any ERROR in the
gateway's log is a problem: `main` prints each and exits 1.

Everything listens on 127.0.0.1; every wait is bounded (`DEADLINE`).

    python -m bench.approvals [--conversations 1000] [--postgres] [--slots 8]

`measure_all` runs `SETUPS` (what `python -m bench.run_all --only approvals` writes into
docs/benchmarks.md, with `bench.approvals_report`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import secrets
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from bench import fake_model
from bench.approvals_checks import Checks as Checks  # read here too: bench.approvals_report
from bench.approvals_checks import check
from bench.approvals_checks import wrong_counts as wrong_counts  # and by its smoke test
from bench.approvals_client import (
    POSTERS,
    Burst,
    Committed,
    Event,
    at,
    body,
    burst,
    each,
    metric_sum,
    metrics,
    pending_by_api,
    post_messages,
    resolve,
)
from bench.harness import Latency, cpu_seconds, free_port, gateway_env, machine_busy_seconds, server
from bench.replicas import ADMIN_URL
from bench.replicas import database as postgres_database

ROLE = "asker"
AUTHOR = f"role:{ROLE}"
CONNECTIONS = 64
"""Connections the answers come from."""
DOUBLE_CLICKS = 32
"""Approvals answered twice at once, at most (a quarter of them when there are fewer)."""
DEFAULT_SLOTS = 8
"""The role's `max_concurrent_turns` when the manifest does not say (core.model.roles.role)."""
SECOND_ANSWERS = 100
"""Approvals answered again once resolved, at most."""
SLOTS_SETTLE = 5.0
"""Seconds the slots gauge may take to reach 0 once every question is pending (the last turn
lends its slots just after its question is committed)."""

STAGES = (
    ("queued", "asking: message committed → turn started"),
    ("to_question", "asking: turn started → question committed"),
    ("to_reply", "answered: resolution committed → reply committed"),
    ("to_commit", "answered: turn's end decided → reply committed"),
    ("plain_queued", "ordinary: message committed → turn started"),
    ("plain_turn", "ordinary: turn started → reply committed"),
)
"""Where a turn's time goes: from the turns' records (`GET /api/v1/runs/{id}/turns`) and the
events' `at`."""


@dataclass(frozen=True, slots=True)
class Cpu:
    """CPU seconds: the gateway's, the fake model's, this process's and the whole machine's."""

    gateway: float
    model: float
    client: float
    machine: float

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(
            self.gateway - other.gateway,
            self.model - other.model,
            self.client - other.client,
            self.machine - other.machine,
        )

    @property
    def others(self) -> float:
        """The rest of the machine's (PostgreSQL's, when it runs on it)."""
        return self.machine - self.gateway - self.model - self.client


@dataclass(frozen=True, slots=True)
class Asking:
    """Pass 1: a message to every conversation until every question is pending."""

    pending: int
    seconds: float
    """First person message sent → the last question seen on the stream."""
    slots_in_use: float
    """`rolecall_turn_slots_in_use` then: every waiting turn lent its slots back."""
    database_slots: int | None
    """The role's slots held in PostgreSQL then (advisory locks, `core.storage.slot_locks`);
    None on SQLite."""
    turns_waiting: float
    """Turns started and not finished then (`/metrics`)."""
    cpu: Cpu


@dataclass(frozen=True, slots=True)
class Resumed:
    """Turns that went on after a person's word: how many replied, how fast, at what CPU."""

    replied: int
    seconds: float
    """First request sent → the last reply seen on the stream."""
    latency: Latency | None
    """Each turn's cause (the approval's resolution, or the person's message) → its reply, by
    the `at` of both events."""
    cpu: Cpu


@dataclass(frozen=True, slots=True)
class Passes:
    """What one gateway did under the four passes."""

    asking: Asking
    answers: Burst
    resumed: Resumed
    again: Burst
    """The second answers."""
    checks: Checks
    plain: Resumed
    """The gateway's own ceiling: a message with `PLAIN` to every conversation, answered by the
    model at once."""
    turns: dict[str, float]
    """`/metrics` at the end: turns finished by outcome, failed attempts, slots in use."""
    stages: dict[str, Latency]
    """Where a turn's time went, by `STAGES`, from the turns' records and the events."""


@dataclass(frozen=True, slots=True)
class Setup:
    """A gateway to run the passes on."""

    name: str
    postgres: bool = False
    """On a PostgreSQL database made for the run (else a fresh SQLite file)."""
    slots: int = DEFAULT_SLOTS
    """The role's `max_concurrent_turns`."""


SQLITE = Setup("SQLite")
SETUPS = (
    SQLITE,
    Setup("SQLite, 64 slots", slots=64),
    Setup("PostgreSQL", postgres=True),
    Setup("PostgreSQL, 64 slots", postgres=True, slots=64),
)
"""What `bench.run_all` measures: the role as it comes (8 slots) on both databases, and with
64 slots, which shows what the 8 cost."""


class Failed(Exception):
    """A run found something wrong (`Result.problems`)."""


@dataclass(frozen=True, slots=True)
class Result:
    setup: Setup
    conversations: int
    gateway: Passes
    ceilings: dict[str, Burst]
    """`commit`, `aiohttp`: the answers' requests to bench/ceiling_server.py."""
    log: dict[str, int]
    """The gateway's log lines by level."""
    problems: list[str]
    """Every count that was wrong; none when all is well."""
    seconds: float
    """The whole run, ceilings included."""


def answer_work(
    approvals: Sequence[tuple[str, str]], double_clicks: int, path: Callable[[str], str]
) -> list[tuple[str, str, bytes]]:
    """Each (approval, person) answered `yes` once; the first `double_clicks` twice, the two
    side by side so that two connections send them in the same wave."""
    work = []
    for i, (approval, person) in enumerate(approvals):
        request = (approval, path(approval), body(option="yes", **{"as": person}))
        work += [request, request] if i < double_clicks else [request]
    return work


# --- the passes -------------------------------------------------------------------------------


@dataclass(slots=True)
class Run:
    """One gateway under the passes: where it is, what it asked, what went wrong."""

    port: int
    token: str
    pid: int
    model_pid: int
    ids: list[str]
    stream: Committed
    marker: str
    """A conversation of its own ({person:bench, role:bench-marker}, no run) for markers."""
    database: str | None
    """The PostgreSQL database's name (None: SQLite)."""
    approvals: dict[str, str] = field(default_factory=dict)
    """Conversation → its question's approval id."""
    asked: dict[str, Event] = field(default_factory=dict)
    """Conversation → the person message that made it ask."""
    plain: dict[str, Event] = field(default_factory=dict)
    """Conversation → the `PLAIN` person message, and its reply (`plain_replies`)."""
    plain_replies: dict[str, Event] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def people(self) -> list[tuple[str, str]]:
        """(approval, the person who answers it), in the conversations' order."""
        return [
            (self.approvals[thread], f"person:u{k}")
            for k, thread in enumerate(self.ids)
            if thread in self.approvals
        ]

    def cpu(self) -> Cpu:
        return Cpu(
            cpu_seconds(self.pid),
            cpu_seconds(self.model_pid),
            time.process_time(),
            machine_busy_seconds(),
        )


async def ask_everyone(run: Run) -> Asking:
    """Pass 1: a message to every conversation, until every question is pending."""
    total = len(run.ids)
    cpu = run.cpu()
    run.asked, began = await post_messages(run.port, run.token, run.ids, "please check")
    pending = await run.stream.until(lambda: len(run.stream.requested), total, "pending")
    seconds = time.perf_counter() - began
    cpu = run.cpu() - cpu
    if pending < total:
        run.problems.append(f"only {pending:,} of {total:,} questions became pending")
    listed = await pending_by_api(run.port, run.token, run.ids)
    for thread in run.ids:
        asked = [e["id"] for e in run.stream.requested.get(thread, ())]
        if asked and listed[thread] == asked[:1]:
            run.approvals[thread] = asked[0]
        elif asked or listed[thread]:
            run.problems.append(f"{thread}: asked {asked}, pending by the API {listed[thread]}")
    slots, held, waiting = await _slots_settled(run)
    if slots != 0 or held:
        run.problems.append(
            f"turn slots in use while every turn waits for a person: {slots:g} in the process, "
            f"{held} in the database"
        )
    return Asking(pending, seconds, slots, held, waiting, cpu)


async def _slots_settled(run: Run) -> tuple[float, int | None, float]:
    """The slots in use in the process and in the database (once none, or after
    `SLOTS_SETTLE`), and the turns started but not finished."""
    deadline = time.monotonic() + SLOTS_SETTLE
    while True:
        found = await metrics(run.port)
        slots = found.get("rolecall_turn_slots_in_use", float("nan"))
        held = await database_slots(run.database)
        if (slots == 0 and not held) or time.monotonic() > deadline:
            started = metric_sum(found, "rolecall_turns_started_total")
            return slots, held, started - metric_sum(found, "rolecall_turns_finished_total")
        await asyncio.sleep(0.1)


async def database_slots(name: str | None) -> int | None:
    """Turn slots held in the PostgreSQL database `name`: the advisory locks
    `core.storage.slot_locks` takes there (None: no database, the run is on SQLite)."""
    if name is None:
        return None
    connection = await asyncpg.connect(ADMIN_URL)
    try:
        held = await connection.fetchval(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = $1",
            name,
        )
    finally:
        await connection.close()
    return int(held)


async def answer_everyone(run: Run, double_clicks: int) -> tuple[Burst, Resumed]:
    """Pass 2: every approval answered at once (the first `double_clicks` twice), until every
    turn's reply is seen."""
    people = run.people()
    work = answer_work(people, double_clicks, lambda a: f"/api/v1/approvals/{a}")
    cpu = run.cpu()
    answers = await burst(run.port, run.token, work, CONNECTIONS)
    replied = await run.stream.until(lambda: len(run.stream.replies), len(people), "resumed")
    firsts = {t: r[0] for t, r in run.stream.replies.items()}
    last = max((run.stream.seen_at[r["id"]] for r in firsts.values()), default=answers.first)
    samples = []
    for thread, approval in run.approvals.items():
        resolved, reply = run.stream.resolved.get(approval), firsts.get(thread)
        if resolved and reply:
            samples.append(at(reply["at"]) - at(resolved[0]["at"]))
    seconds = last - answers.first
    resumed = Resumed(replied, seconds, _latency(samples, seconds), run.cpu() - cpu)
    if replied < len(people):
        run.problems.append(f"only {replied:,} of {len(people):,} turns resumed and replied")
    return answers, resumed


async def answer_again(run: Run, count: int) -> tuple[Burst, list[Event]]:
    """Pass 3: `count` resolved approvals answered again, all at once and nothing else running;
    the answers, and the events committed between a marker before and one after them."""
    people = run.people()
    sample = people[:: max(len(people) // max(count, 1), 1)][:count]
    work = answer_work(sample, 0, lambda a: f"/api/v1/approvals/{a}")
    before = await _marker(run, "before the second answers")
    again = await burst(run.port, run.token, work, max(len(work), 1))
    after = await _marker(run, "after the second answers")
    return again, [e for e in run.stream.events if before < e["position"] < after]


async def _marker(run: Run, text: str) -> int:
    """Post `text` in the marker conversation; its position, once the stream has it."""
    path = f"/api/v1/threads/{run.marker}/messages"
    [(status, posted)] = await each(
        run.port, run.token, [(path, body(author="person:bench", text=text))], 1
    )
    assert status == 201, (status, posted)
    await run.stream.until(lambda: int(posted["id"] in run.stream.seen_at), 1, "marker")
    return int(posted["position"])


async def ordinary_turns(run: Run) -> Resumed:
    """Pass 4, the gateway's own ceiling: a `PLAIN` message to every conversation, which the
    model answers at once, until every reply is seen."""
    cpu = run.cpu()
    run.plain, began = await post_messages(run.port, run.token, run.ids, fake_model.PLAIN)
    messages = run.plain

    def answered() -> dict[str, Event]:
        found = {}
        for thread, message in messages.items():
            later = run.stream.replies_after(thread, message["position"])
            if later:
                found[thread] = later[0]
        return found

    replied = await run.stream.until(lambda: len(answered()), len(messages), "ordinary turns")
    replies = run.plain_replies = answered()
    last = max((run.stream.seen_at[r["id"]] for r in replies.values()), default=began)
    samples = [at(r["at"]) - at(messages[t]["at"]) for t, r in replies.items()]
    cpu = run.cpu() - cpu
    if replied < len(messages):
        run.problems.append(f"only {replied:,} of {len(messages):,} ordinary turns replied")
    seconds = last - began
    return Resumed(replied, seconds, _latency(samples, seconds), cpu)


def _latency(samples: Sequence[float], seconds: float) -> Latency | None:
    return Latency.of(samples, seconds) if samples else None


async def turn_stages(run: Run) -> dict[str, Latency]:
    """Each of `STAGES` over the conversations, from their turns' records: the first turn is
    the one that asked, the second the ordinary one."""
    work = [(f"/api/v1/runs?thread={thread}", b"") for thread in run.ids]
    runs = await each(run.port, run.token, work, POSTERS)
    thread_of = {r["id"]: r["thread_id"] for _, answer in runs for r in answer["runs"]}
    work = [(f"/api/v1/runs/{run_id}/turns", b"") for run_id in thread_of]
    listed = await each(run.port, run.token, work, POSTERS)
    turns: dict[str, list[Event]] = defaultdict(list)
    for _, answer in listed:
        for turn in answer["turns"]:
            turns[thread_of[turn["run_id"]]].append(turn)
    samples: dict[str, list[float]] = {name: [] for name, _ in STAGES}
    for thread in run.ids:
        _stages_of(run, thread, sorted(turns.get(thread, []), key=lambda t: t["number"]), samples)
    return {name: Latency.of(found, 0.0) for name, found in samples.items() if found}


def _stages_of(run: Run, thread: str, turns: list[Event], samples: dict[str, list[float]]) -> None:
    """One conversation's stages, of those its turns and events show (a conversation whose
    turns went wrong is counted among the problems, not here)."""
    replies = run.stream.replies.get(thread, [])
    resolved = run.stream.resolved.get(run.approvals.get(thread, ""), [])
    if len(turns) != 2 or not replies or not resolved:
        return
    asking, plain = turns
    started, finished = at(asking["started_at"]), at(asking["finished_at"])
    question = run.stream.requested[thread][0]
    samples["queued"].append(started - at(run.asked[thread]["at"]))
    samples["to_question"].append(at(question["at"]) - started)
    samples["to_reply"].append(at(replies[0]["at"]) - at(resolved[0]["at"]))
    samples["to_commit"].append(at(replies[0]["at"]) - finished)
    plain_started = at(plain["started_at"])
    samples["plain_queued"].append(plain_started - at(run.plain[thread]["at"]))
    if thread in run.plain_replies:
        samples["plain_turn"].append(at(run.plain_replies[thread]["at"]) - plain_started)


# --- the checks -------------------------------------------------------------------------------


async def end_of_turns(run: Run, total: int) -> dict[str, float]:
    """What `/metrics` (and PostgreSQL) say at the end: every turn replied, no attempt failed,
    no slot held."""
    found = await metrics(run.port)
    outcomes = {
        m.group(1): value
        for key, value in found.items()
        if (m := re.match(r'rolecall_turns_finished_total\{.*outcome="(\w+)"', key))
    }
    turns = {
        **outcomes,
        "failed attempts": metric_sum(found, "rolecall_turn_attempts_failed_total"),
        "slots in use": found.get("rolecall_turn_slots_in_use", float("nan")),
    }
    held = await database_slots(run.database)
    if held is not None:
        turns["slots held in the database"] = held
    if outcomes.get("replied", 0) != total or sum(outcomes.values()) != total:
        run.problems.append(f"turns finished: {outcomes}, expected {total:,} replied")
    if turns["failed attempts"] or turns["slots in use"] or held:
        run.problems.append(f"at the end: {turns}")
    return turns


def log_levels(log: Path, problems: list[str]) -> dict[str, int]:
    """The gateway's log lines by level; every ERROR or CRITICAL line is a problem."""
    levels: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
            level = str(record.get("level", "?")).upper()
        except ValueError:
            record, level = {"message": line}, "TEXT"
        levels[level] += 1
        if level in ("ERROR", "CRITICAL") and levels[level] <= 5:
            problems.append(f"gateway log {level}: {str(record.get('message'))[:300]}")
    if levels["ERROR"] + levels["CRITICAL"] > 5:
        problems.append(f"gateway log: {levels['ERROR'] + levels['CRITICAL']} ERROR lines in all")
    return dict(levels)


# --- the run ----------------------------------------------------------------------------------


def role_dir(directory: Path, model_port: int, slots: int = DEFAULT_SLOTS) -> Path:
    """The one role: the fake model over the `openai` runtime, every other setting default
    (`max_concurrent_turns` too, unless `slots` says otherwise)."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = (
        f"name: {ROLE}\n"
        "display_name: Asker\n"
        "instructions: Ask before you act.\n"
        "runtime:\n"
        "  kind: openai\n"
        f"  base_url: http://127.0.0.1:{model_port}/v1\n"
        f"  model: {fake_model.MODEL}\n"
        "  stream: false\n"
    )
    if slots != DEFAULT_SLOTS:
        manifest += f"max_concurrent_turns: {slots}\n"
    (directory / f"{ROLE}.yaml").write_text(manifest)
    return directory


async def gateway_passes(
    port: int,
    token: str,
    pids: tuple[int, int],
    database: str | None,
    conversations: int,
    double_clicks: int,
) -> tuple[Passes, list[tuple[str, str]], list[str]]:
    """The four passes on a started gateway (on the PostgreSQL database `database`, or SQLite);
    with the (approval, person) pairs answered and the problems found."""
    ids = await resolve(port, token, conversations, AUTHOR)
    marker = await each(port, token, [("/api/v1/threads", _MARKER_THREAD)], 1)
    async with (await Committed.open(port, token, AUTHOR)).following() as stream:
        run = Run(port, token, *pids, ids, stream, marker[0][1]["id"], database)
        asking = await ask_everyone(run)
        answers, resumed = await answer_everyone(run, double_clicks)
        again, between = await answer_again(run, SECOND_ANSWERS)
        checks, wrong = check(
            run.stream,
            run.approvals,
            dict(run.people()),
            answers=answers,
            double_clicks=double_clicks,
            again=again,
            between=between,
        )
        run.problems += wrong
        plain = await ordinary_turns(run)
        stages = await turn_stages(run)
        turns = await end_of_turns(run, 2 * len(run.approvals))
    found = Passes(asking, answers, resumed, again, checks, plain, turns, stages)
    return found, run.people(), run.problems


_MARKER_THREAD = body(participants=["person:bench", "role:bench-marker"])


def ceilings(workdir: Path, people: list[tuple[str, str]], double_clicks: int) -> dict[str, Burst]:
    """The answers' requests, the same from as many connections, to bench/ceiling_server.py: one
    INSERT and COMMIT each (`commit`), and aiohttp alone (`aiohttp`)."""
    work = answer_work(people, double_clicks, lambda a: f"/api/v1/threads/{a}/messages")
    found = {}
    for name, database in (("commit", str(workdir / "ceiling.db")), ("aiohttp", "-")):
        port = free_port()
        with server(["-m", "bench.ceiling_server", str(port), database], port=port):
            found[name] = asyncio.run(burst(port, "", work, CONNECTIONS))
    return found


def double_clicks_for(conversations: int) -> int:
    return min(DOUBLE_CLICKS, conversations // 4)


def measure(workdir: Path, conversations: int = 1_000, setup: Setup = SQLITE) -> Result:
    """Every pass on one gateway (SQLite, or a PostgreSQL database of its own), then the
    ceilings."""
    began = time.perf_counter()
    workdir.mkdir(parents=True, exist_ok=True)
    token, double_clicks = secrets.token_urlsafe(24), double_clicks_for(conversations)
    log = workdir / "gateway.log"
    with contextlib.ExitStack() as stack:
        model_port, port = free_port(), free_port()
        model = stack.enter_context(
            server(["-m", "bench.fake_model", str(model_port)], port=model_port)
        )
        url = stack.enter_context(postgres_database()) if setup.postgres else ""
        roles = role_dir(workdir / "roles", model_port, setup.slots)
        env = gateway_env(workdir / "gateway", port, token, roles_dir=roles, database_url=url)
        env["ROLECALL_LOG_FORMAT"] = "json"
        with server(["-m", "gateway", "serve"], port=port, env=env, log=log) as gateway:
            pids = (gateway.pid, model.pid)
            database = url.rsplit("/", 1)[1] if url else None
            found, people, problems = asyncio.run(
                gateway_passes(port, token, pids, database, conversations, double_clicks)
            )
    levels = log_levels(log, problems)
    bare = ceilings(workdir, people, double_clicks)
    seconds = time.perf_counter() - began
    return Result(setup, conversations, found, bare, levels, problems, seconds)


def measure_all(
    workdir: Path, conversations: int = 1_000, setups: Sequence[Setup] = SETUPS
) -> list[Result]:
    """Every setup, one after the other, each in a directory of its own."""
    return [measure(workdir / f"run{i}", conversations, s) for i, s in enumerate(setups)]


def fail_on_problems(results: Sequence[Result]) -> None:
    """Raise `Failed` with every problem of every run, if there is any."""
    problems = [f"{r.setup.name}: {p}" for r in results for p in r.problems]
    if problems:
        raise Failed("\n".join(problems))


def summary(result: Result) -> list[str]:
    """The run in a few lines, for the terminal."""
    g, n = result.gateway, result.conversations
    ask, resumed, plain, checks = g.asking, g.resumed, g.plain, g.checks
    lines = [
        f"{result.setup.name}, {n:,} conversations, {result.setup.slots} slots, "
        f"{result.seconds:.0f} s",
        f"pending {ask.pending:,} after {ask.seconds:.2f} s; then slots in use "
        f"{ask.slots_in_use:g} (database {ask.database_slots}), turns waiting "
        f"{ask.turns_waiting:g}; {_cpu(ask.cpu)}",
        f"answers: {len(g.answers.sent):,} POSTs {g.answers.statuses}, last 200 after "
        f"{g.answers.seconds(status=200):.2f} s, {_cells(g.answers.latency)}",
        f"resumed {resumed.replied:,}/{checks.approvals:,}, last reply {resumed.seconds:.2f} s "
        f"after the first POST; resolution → reply {_cells(resumed.latency)}; {_cpu(resumed.cpu)}",
        f"ordinary turns {plain.replied:,}/{n:,}: last reply {plain.seconds:.2f} s after the "
        f"first post; message → reply {_cells(plain.latency)}; {_cpu(plain.cpu)}",
        *(
            f"ceiling {name}: {b.seconds():.2f} s, {_cells(b.latency)} {b.statuses}"
            for name, b in result.ceilings.items()
        ),
        *(f"  {what}: {_cells(g.stages.get(name))}" for name, what in STAGES),
        f"checks: {checks}",
        f"turns: {g.turns}; log: {result.log}",
    ]
    return lines + [f"PROBLEM: {p}" for p in result.problems]


def _cpu(cpu: Cpu) -> str:
    return (
        f"CPU s: gateway {cpu.gateway:.1f}, model {cpu.model:.1f}, client {cpu.client:.1f}, "
        f"others {cpu.others:.1f}"
    )


def _cells(latency: Latency | None) -> str:
    if latency is None:
        return "n/a"
    return f"p50 {latency.p50_ms:,.1f} ms p99 {latency.p99_ms:,.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--postgres", action="store_true", help="on a PostgreSQL database")
    parser.add_argument("--slots", type=int, default=DEFAULT_SLOTS, help="max_concurrent_turns")
    args = parser.parse_args()
    name = "PostgreSQL" if args.postgres else "SQLite"
    setup = Setup(name, postgres=args.postgres, slots=args.slots)
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = measure(Path(tmp), args.conversations, setup)
    print("\n".join(summary(result)))
    if result.problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
