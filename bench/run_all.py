"""Run every benchmark and write the results to docs/benchmarks.md.

    python -m bench.run_all            (or: make bench)
    python -m bench.run_all --only recall
    python -m bench.run_all --only fanout
    python -m bench.run_all --only sse
    python -m bench.run_all --only slack
    python -m bench.run_all --only webhooks
    python -m bench.run_all --only acp
    python -m bench.run_all --only malformed
    python -m bench.run_all --only approvals
    python -m bench.run_all --only traces
    python -m bench.run_all --only console

Each benchmark measures its ceiling in the same run, on the same machine, so the ratios mean
something even when the absolute numbers move with the machine's load. `--only NAME` (recall,
fanout, sse, slack, webhooks, acp, malformed, approvals, traces or console) runs that benchmark
alone and writes its section over the one in the report (or after the others), saying when and
where it was measured, apart from the run at the top. The approvals benchmark fails
(`approvals.Failed`, a non-zero exit) once the report is written when any of its exactly-once
counts is wrong.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from bench import (
    acp_sleep,
    approvals,
    approvals_report,
    console,
    fanout,
    ingest,
    recall,
    roundtrip,
    slack_events,
    sleep_memory,
    sse,
    timeline,
    traces,
    webhooks,
)
from bench.harness import ROOT, Latency, machine, today

REPORT = ROOT / "docs" / "benchmarks.md"

INGEST_TARGET = "at least 4,000 messages/s with p99 under 15 ms"
TIMELINE_TARGET = "p99 under 5 ms"
ROUNDTRIP_TARGET = "at least 1,500 round trips/s with p99 under 50 ms"
RECALL_TARGET = "p99 under 10 ms"
SLACK_TARGET = "p99 time to the 200 under 100 ms, no duplicates"
WEBHOOKS_TARGET = "inbound: p99 time to the 2xx reported (no number set), duplicates processed 0"

CONVERSATIONS = 1_000
ROUND_TRIPS = 10_000
POSTERS = 32
IDLE_CONVERSATIONS = 10_000
RECALL_ENTRIES = 100_000
RECALL_THREADS = 1_000
RECALL_READS = 1_000
FANOUT_CONVERSATIONS = 1_000
FANOUT_ROUNDS = 5
SSE_STREAMS = 2_000
SSE_MESSAGES = 30
SSE_RECONNECT = 100
SSE_MISSED = 5
SLACK_RATE = 500
SLACK_SECONDS = 20
SLACK_PEOPLE = 500
WEBHOOKS_RATE = 1_000
WEBHOOKS_SECONDS = 10
WEBHOOKS_KEYS = 1_000
WEBHOOKS_EVENTS = 10_000
WEBHOOKS_ENDPOINTS = 10
ACP_CONVERSATIONS = 200
ACP_IDLE_SLEEP = 5.0
APPROVALS_CONVERSATIONS = 1_000
TRACES_CONVERSATIONS = 500
TRACES_ROUND_TRIPS = 5_000
TRACES_ROUNDS = 3
CONSOLE_CONVERSATIONS = 10_000
CONSOLE_EVENTS = 100_000
CONSOLE_READS = 200

RECALL_HEADING = "## Agent memory recall"
MALFORMED_HEADING = "## Message ingest with malformed requests"
MALFORMED_SHARE = 0.1
MALFORMED_ROUNDS = 2
FANOUT_HEADING = "## Task fan-out to subscribed conversations"
SSE_HEADING = "## Widget streams (Server-Sent Events)"
SLACK_HEADING = "## Slack events (Events API) at a steady rate"
WEBHOOKS_HEADING = "## Webhooks: signed deliveries in, committed events out"
ACP_HEADING = "## ACP agents that sleep and wake"

WHERE_THE_TIME_GOES = """\
Where the time goes. On two cores the load generator takes part of one; the server is one Python
process whose threads share one interpreter lock, so its throughput is its CPU time per message.
"aiohttp alone" is the floor any aiohttp handler pays per request on this machine. The gateway
adds, per message: the operator-token check, strict JSON validation, request id, metrics and the
access-log decision, and its share of a group-commit batch — one transaction per batch that
loads the batch's threads and members, takes positions from the counter row, inserts the events
and advances each thread's `seq`, committed with an fsync (WAL, synchronous=FULL). Batches hold
about as many messages as there are clients waiting (about 16 of 32 here). The batch's
statements run on the event loop itself, compiled once per database and handed to the driver's
cursor with plain rows of values; only the COMMIT goes to the writer's thread, where the fsync
waits on the disk without holding the interpreter lock. Before that change (2026-11-30) the
whole batch ran in that thread, and each of its statements fought the event loop for the lock:
on a machine of this kind the gateway then ingested about 3,400 messages/s at about 280 µs of
server CPU per message, against about 4,700 to 5,300 at about 200 to 215 µs after it (measured
alternately, minutes apart). These machines' speed varies from run to run by a fifth or more
(other virtual machines share their host), so the ratios to the ceilings, measured minutes
apart, say more than any one rate."""


ROUNDTRIP_WHERE_THE_TIME_GOES = """\
Where the time goes. A round trip is far more work for the gateway than an ingested message: the
person message's HTTP request and its share of a write batch; the run host's nudge (from the
writer's after-commit callback, no read); the run's read of its news (one statement, in one read
with the other runs reading in the same loop iteration); the echo turn itself (in process, next
to nothing); the end of the turn, which commits the reply with the run's cursor and the turn's
record in the next write batch; and the listener's long-poll requests that carry both events out
as JSON. That is two commits, one run read and two event reads per round trip. With one message
outstanding per poster, the rate is the posters over the round trip's latency, and with the
server's one interpreter lock busy all the time, the latency is its CPU per round trip times the
posters. The write batches' statements, the run's news read and the event stream's pages run on
the event loop (bounded reads by index, and statements that take microseconds, cost less there
than the hop to a database thread and the fight for the interpreter lock that came with it; only
the COMMIT's fsync still waits in the writer's thread, and work that finds the file locked by
another process goes to a thread instead of blocking the loop); and the hot statements run on
the driver's cursor, compiled once, without SQLAlchemy's per-execution work (its bind and result
processing is kept). When that changed (2026-11-30), alternating runs minutes apart on a machine
of this kind measured about 780 to 1,050 round trips/s at 1,020 to 1,380 µs of server CPU per
round trip before, about 1,100 to 1,500 at 690 to 970 µs after. That machine was slower (its
ingest ceilings were about 30% below this run's), and the spread between runs is the
machines'."""

SLEEP_WHAT_STAYS = """\
What stays. Asleep, a conversation is rows in the database; the process still holds the run
host's cache of each thread's role members (one small entry per thread that has had a message,
up to 100,000), SQLite's page caches (the writer's connection, the four reader threads' and the
event loop's, up to 2 MiB each by default), and the memory Python's allocator keeps after
objects are freed. Every echo session here is tiny (its state is a few fields), so the
awake/asleep difference is what holding a session and its run costs the host, not what an agent
with real context would cost."""

WEBHOOKS_WHERE_THE_TIME_GOES = """\
Where the time goes (read from the code and the CPU counters above; not profiled). Inbound: each
delivery is one unit of work in the gateway's group-commit writer (`ReceiveDelivery`,
core/storage/webhooks_store.py), run on the event loop like every write batch's statements (only
the COMMIT waits in the writer's thread): about ten SQL statements built with SQLAlchemy Core
(the delivery id looked up, the item's lock, its task read, the delivery recorded, the task
created or not, the comment's event with its position and the task's counters, the task read
back for the answer), then the answer's JSON with the task and its events; the signature check
itself is the ceiling's cost. The server CPU per request in the table is what one delivery
costs, so the gateway acknowledges at most about one core divided by it; when the offered rate
is above that, the open load queues and the time to the 2xx is mostly the client lag (a delivery
waiting for a free connection), not the gateway's time per request. Outbound: each endpoint's
worker sends one request at a time and, after each 2xx, writes its cursor with the attempt
(`endpoints.record`: a unit of a write batch, a commit with an fsync) before it sends the next;
the ten workers' records share batches, but every event of every endpoint waits for its own
commit. All endpoints together are then bound by the gateway's CPU per delivery (the page read,
the body's JSON, the signature, aiohttp's client request, the record) on one interpreter, which
is why they drain in step, and why the flapping endpoint, whose backoff leaves the others more
of it, finishes barely after them. The bare sender pays only the request (and its share of the
receivers' process). When other processes used a core of their own, as the CPU figures above
say, the gateway got less than a core: the absolute rates then understate it, the CPU per
request and per delivery less so."""


def _row(name: str, result: Latency) -> str:
    return f"| {name} | {result.p50_ms:.2f} | {result.p99_ms:.2f} |"


def _ingest_row(name: str, result: ingest.Ingest) -> str:
    latency = result.latency
    return (
        f"| {name} | {latency.rate:,.0f} | {latency.p50_ms:.2f} | {latency.p99_ms:.2f} "
        f"| {result.cpu_us_per_message:,.0f} |"
    )


def _trips_row(name: str, trips: roundtrip.RoundTrips) -> str:
    latency = trips.latency
    return (
        f"| {name} | {trips.posters} | {latency.count:,} | {latency.rate:,.0f} "
        f"| {latency.p50_ms:.2f} | {latency.p99_ms:.2f} | {trips.posted.p50_ms:.2f} "
        f"| {trips.cpu_us_per_round_trip:,.0f} | {trips.missing} |"
    )


def _mib(size: float) -> str:
    return f"{size / 2**20:,.1f}"


def _memory_row(name: str, idle_sleep_after: int, run: sleep_memory.Run) -> str:
    return (
        f"| {name} | {idle_sleep_after} s | {run.sessions_awake:,} / {run.sessions_asleep:,} "
        f"| {_mib(run.baseline.rss)} | {_mib(run.resolved.rss)} | {_mib(run.used.rss)} "
        f"| {_mib(run.used.pss)} | {_mib(run.used.uss)} | {run.per_conversation:,.0f} |"
    )


def _meets(trips: roundtrip.RoundTrips) -> bool:
    return trips.latency.rate >= 1_500 and trips.latency.p99_ms < 50 and trips.missing == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        choices=[
            "recall",
            "fanout",
            "sse",
            "slack",
            "webhooks",
            "acp",
            "malformed",
            "approvals",
            "traces",
            "console",
        ],
        help="run this benchmark alone",
    )
    only = parser.parse_args().only
    if only is not None:
        alone: dict[str, Callable[[], list[str]]] = {
            "recall": recall_only,
            "fanout": fanout_only,
            "sse": sse_only,
            "slack": slack_only,
            "webhooks": webhooks_only,
            "acp": acp_only,
            "malformed": malformed_only,
            "approvals": approvals_only,
            "traces": traces_only,
            "console": console_only,
        }
        print("\n".join(alone[only]()))
        return
    began = time.monotonic()
    timings: dict[str, float] = {}

    def timed(name: str, started: float) -> None:
        timings[name] = time.monotonic() - started
        print(f"{name}: {timings[name]:.0f} s", flush=True)

    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        workdir = Path(tmp)
        started = time.monotonic()
        runs = ingest.measure_all(workdir, 20_000, 1_000, 32)
        timed("ingest", started)
        started = time.monotonic()
        bad = ingest.measure_malformed(
            workdir / "malformed",
            20_000,
            1_000,
            32,
            share=MALFORMED_SHARE,
            rounds=MALFORMED_ROUNDS,
        )
        timed("malformed", started)
        started = time.monotonic()
        reads = timeline.measure(100_000, 1_000)
        timed("timeline", started)
        started = time.monotonic()
        trips = roundtrip.measure(
            workdir / "roundtrip", CONVERSATIONS, ROUND_TRIPS, POSTERS, ceiling=runs["gateway"]
        )
        timed("roundtrip", started)
        started = time.monotonic()
        idle = sleep_memory.measure(workdir / "sleep", IDLE_CONVERSATIONS)
        timed("sleep_memory", started)
        started = time.monotonic()
        memory = recall.measure(RECALL_ENTRIES, RECALL_THREADS, RECALL_READS)
        timed("recall", started)
        started = time.monotonic()
        fan = fanout.measure(FANOUT_CONVERSATIONS, FANOUT_ROUNDS)
        timed("fanout", started)
        started = time.monotonic()
        streams = sse.measure(SSE_STREAMS, SSE_MESSAGES, SSE_RECONNECT, SSE_MISSED)
        timed("sse", started)
        started = time.monotonic()
        slack = slack_events.measure(SLACK_RATE, SLACK_SECONDS, SLACK_PEOPLE)
        timed("slack", started)
        started = time.monotonic()
        hooks = webhooks.measure(
            WEBHOOKS_RATE, WEBHOOKS_SECONDS, WEBHOOKS_KEYS, WEBHOOKS_EVENTS, WEBHOOKS_ENDPOINTS
        )
        timed("webhooks", started)
        started = time.monotonic()
        agents = acp_sleep.measure(workdir / "acp", ACP_CONVERSATIONS, ACP_IDLE_SLEEP)
        timed("acp", started)
        started = time.monotonic()
        answered = approvals.measure_all(workdir / "approvals", APPROVALS_CONVERSATIONS)
        timed("approvals", started)
    minutes = (time.monotonic() - began) / 60
    bare, ceiling, gateway = (runs[k].latency for k in ("aiohttp", "commit", "gateway"))
    verdict_ingest = "met" if gateway.rate >= 4_000 and gateway.p99_ms < 15 else "**not met**"
    verdict_read = "met" if reads["repository"].p99_ms < 5 else "**not met**"
    verdict_http = "met" if reads["http"].p99_ms < 5 else "**not met**"
    lines = [
        "# Benchmarks",
        "",
        f"Measured {today()} on {machine()} by `python -m bench.run_all` (`make bench`),",
        f"which took {minutes:.0f} minutes ("
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items())
        + ").",
        "Every number below comes from that one run; each benchmark measures its own ceiling in",
        "the same run, so compare the ratios rather than absolute numbers across machines.",
        "",
        "## Message ingest over HTTP",
        "",
        "`python -m bench.ingest`: 32 concurrent keep-alive clients post 20,000 messages across",
        "1,000 threads (person:pN with role:concierge) to a fresh SQLite database; the gateway",
        "runs with an empty roles directory, so no run answers. The load comes from",
        "`bench/loadgen.py` in its own process. The ceiling is `bench/ceiling_server.py`: a bare",
        "aiohttp handler that INSERTs one row with stdlib sqlite3 and commits per request, on",
        "the gateway's durability settings (WAL, synchronous=FULL); it validates nothing.",
        "",
        "| server | messages/s | p50 ms | p99 ms | server CPU µs/message |",
        "| --- | ---: | ---: | ---: | ---: |",
        _ingest_row("aiohttp alone, no database (`ceiling_server PORT -`)", runs["aiohttp"]),
        _ingest_row("ceiling: bare handler, one commit per request", runs["commit"]),
        _ingest_row("rolecall serve (group commit)", runs["gateway"]),
        "",
        f"Gateway/ceiling throughput: **{gateway.rate / ceiling.rate:.2f}**; "
        f"gateway/aiohttp-alone: **{gateway.rate / bare.rate:.2f}**. "
        f"Target ({INGEST_TARGET}): {verdict_ingest}.",
        "",
        WHERE_THE_TIME_GOES,
        "",
        "## Timeline read with blackout windows",
        "",
        "`python -m bench.timeline`: one thread of 100,000 events (person:alice, person:bob,",
        "role:concierge); alice is removed and re-added five times, the last blackout ending a",
        "few events before the end, so the newest page must reach past it. Each of 1,000",
        "sequential reads asks for the newest 50 events alice may see (the server has no role",
        "manifests, so no run starts answering bob while it is read).",
        "",
        "| read | p50 ms | p99 ms |",
        "| --- | ---: | ---: |",
        _row("ceiling: newest 50 rows, stdlib sqlite3, unfiltered", reads["ceiling"]),
        _row("ThreadRepository.latest (in process)", reads["repository"]),
        _row("GET …/timeline?as=person:alice&latest=true&limit=50", reads["http"]),
        "",
        f"Target ({TIMELINE_TARGET}): repository {verdict_read}; over HTTP {verdict_http}.",
        "",
        *_malformed_section(bad),
        *_roundtrip_section(trips),
        *_sleep_section(idle),
        *_recall_section(memory),
        *_fanout_section(fan),
        *_sse_section(streams),
        *_slack_section(slack),
        *_acp_section(agents),
        *_webhooks_section(hooks),
        *approvals_report.section(answered),
    ]
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))
    approvals.fail_on_problems(answered)


def _paragraph(text: str) -> str:
    """Wrap at 96 columns, never inside a `code span`."""
    spans = text.split("`")
    glued = "`".join(s.replace(" ", "\0") if i % 2 else s for i, s in enumerate(spans))
    wrapped = textwrap.fill(glued, width=96, break_on_hyphens=False, break_long_words=False)
    return wrapped.replace("\0", " ")


def _roundtrip_section(result: roundtrip.Result) -> list[str]:
    first, warm, ceiling = result.first, result.warm, result.ceiling
    ratio = warm.latency.rate / ceiling.latency.rate
    cost = warm.cpu_us_per_round_trip / ceiling.cpu_us_per_message
    verdict = "met" if _meets(warm) else "**not met**"
    met_at = [t.posters for t in result.sweep if _meets(t)]
    elsewhere = (
        ""
        if _meets(warm)
        else f"; met with {', '.join(map(str, met_at))} posters"
        if met_at
        else "; nor with any other number of posters measured"
    )
    sweep = " and ".join(str(t.posters) for t in result.sweep)
    alone = min([warm, *result.sweep], key=lambda t: t.posters)
    needed = warm.cpu_us_per_round_trip * 1_500 / 1e6
    cores = os.cpu_count() or 1
    sweep_count = result.sweep[0].latency.count if result.sweep else 0
    return [
        "## Round trips: a person posts, the echo role replies",
        "",
        _paragraph(
            "`python -m bench.roundtrip`: `rolecall serve` on a fresh SQLite file with one role, "
            "`echo` (the built-in agent that answers each person message with exactly its text; "
            "`max_concurrent_turns: 64`, 64 turn slots), and "
            f"{first.latency.count:,} conversations {{person:uN, role:echo}}. {warm.posters} "
            "posters on keep-alive connections (`bench/loadgen.py`'s client) each own their "
            "share of the conversations and go round them with one message outstanding at a "
            "time, so each conversation is a FIFO: post, wait for the echo, post again. Replies "
            "are observed as an outside listener sees them, on the committed-event stream "
            "(`GET /api/v1/events?after=…&wait=5` long-polls on a connection of its own). "
            "Latency runs from the post being sent to the reply's commit being seen on the "
            "stream. The first pass is each conversation's first message (its run is created "
            f"and its session started); then {warm.latency.count:,} warm round trips; then "
            f"{sweep_count:,} warm ones with {sweep} posters, all on the same server. The "
            "ceiling is the ingest-only rate measured above in this run: the gateway row of the "
            f"ingest table ({ceiling.latency.count:,} messages from {warm.posters} clients, "
            "no roles, so nothing replies)."
        ),
        "",
        "| pass | posters | round trips | round trips/s | p50 ms | p99 ms | post answered p50 ms "
        "| server CPU µs/round trip | replies missing |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        _trips_row("first contact (run created, session started)", first),
        _trips_row("warm", warm),
        *(_trips_row("warm", t) for t in result.sweep),
        f"| ceiling: ingest only, nothing replies | {warm.posters} "
        f"| {ceiling.latency.count:,} messages | {ceiling.latency.rate:,.0f} messages/s "
        f"| {ceiling.latency.p50_ms:.2f} | {ceiling.latency.p99_ms:.2f} "
        f"| {ceiling.latency.p50_ms:.2f} | {ceiling.cpu_us_per_message:,.0f} per message | n/a |",
        "",
        _paragraph(
            f"Round trips/s ÷ ingest-only messages/s: **{ratio:.2f}** (a round trip commits two "
            f"messages, so **{2 * ratio:.2f}** of the ingest rate counted in messages); server "
            f"CPU per round trip ÷ per ingested message: **{cost:.1f}**. Target "
            f"({ROUNDTRIP_TARGET}), warm with {warm.posters} posters: {verdict}{elsewhere}."
        ),
        "",
        ROUNDTRIP_WHERE_THE_TIME_GOES,
        "",
        _paragraph(
            f"With one poster a round trip takes {alone.latency.p50_ms:.1f} ms (p99 "
            f"{alone.latency.p99_ms:.1f} ms), {alone.latency.rate:,.0f} a second. With "
            f"{warm.posters}, at {warm.cpu_us_per_round_trip:,.0f} µs of server CPU per round "
            f"trip, 1,500 round trips/s would take {needed:.1f} CPU-seconds every second "
            f"({'more than' if needed > cores else 'within'} the machine's {cores} cores), the "
            "Python side of it serialised by one interpreter lock."
            + (
                ""
                if _meets(warm)
                else " Reaching the target would take less CPU per round trip: it is spread over "
                "the two HTTP requests' share, the two write batches, the run's read and the "
                "turn's own bookkeeping (its record, metrics and tasks), all on one event loop."
            )
        ),
        "",
    ]


def _sleep_section(runs: dict[str, sleep_memory.Run]) -> list[str]:
    awake, asleep = runs["awake"], runs["asleep"]
    count = awake.conversations
    saved = (awake.used.rss - asleep.used.rss) / count
    less = f"**{saved:,.0f} bytes** less" if saved >= 0 else f"**{-saved:,.0f} bytes** more"
    return [
        "## Memory of idle conversations, awake and asleep",
        "",
        _paragraph(
            f"`python -m bench.sleep_memory`: {count:,} conversations {{person:uN, role:echo}}, "
            f"each used once (one message, its echo awaited on the event stream, "
            f"{sleep_memory.POSTERS} posters), then left idle. Two servers, each on a fresh "
            "SQLite file: one whose echo manifest says "
            f"`idle_sleep_after: {sleep_memory.AWAKE_IDLE_SLEEP}` (every session stays awake), "
            f"one `idle_sleep_after: {sleep_memory.ASLEEP_IDLE_SLEEP}` (every session is put to "
            'sleep). Memory is read once `GET /metrics` shows `rolecall_sessions{state="awake"}` '
            "at the count or at 0: RSS is VmRSS from /proc/PID/status; PSS and USS (private "
            'clean + private dirty) come from /proc/PID/smaps_rollup. "Fresh" is the server '
            'before anything; "resolved" is after the conversations are resolved, before any '
            "message."
        ),
        "",
        "| run | idle_sleep_after | sessions awake / asleep | RSS fresh MiB | RSS resolved MiB "
        "| RSS after use MiB | PSS MiB | USS MiB | RSS bytes/conversation over fresh |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        _memory_row("awake", sleep_memory.AWAKE_IDLE_SLEEP, awake),
        _memory_row("asleep", sleep_memory.ASLEEP_IDLE_SLEEP, asleep),
        "",
        _paragraph(
            f"Asleep instead of awake: {less} RSS per conversation. Asleep, a conversation "
            f"still costs **{asleep.per_conversation:,.0f} bytes** of RSS over the fresh "
            f"server (awake: {awake.per_conversation:,.0f}). Replies missing: "
            f"{awake.missing + asleep.missing}. Each run (resolve, one round trip each, wait "
            f"for the gauge) took about {(awake.seconds + asleep.seconds) / 2:.0f} s."
        ),
        "",
        SLEEP_WHAT_STAYS,
        "",
    ]


def malformed_only(report: Path = REPORT) -> list[str]:
    """Run the malformed-ingest benchmark alone and write its section into `report`: over the
    section there, or after the others."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = ingest.measure_malformed(
            Path(tmp), 20_000, 1_000, 32, share=MALFORMED_SHARE, rounds=MALFORMED_ROUNDS
        )
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only malformed`, "
        f"which took {time.monotonic() - started:.0f} s, apart from the run at the top of this "
        "page."
    )
    section = _malformed_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, MALFORMED_HEADING, section))
    return section


def _malformed_section(rounds: list[ingest.Mixed], *, measured: str = "") -> list[str]:
    share = rounds[0].share
    rows = []
    for number, one in enumerate(rounds, 1):
        clean = one.clean.latency
        codes = ", ".join(f"{s} ({n:,})" for s, n in sorted(one.statuses.items()) if s != 201)
        rows += [
            f"| {number} | clean | {clean.count:,} | {clean.rate:,.0f} | {clean.p50_ms:.2f} "
            f"| {clean.p99_ms:.2f} | — | {one.load[0]:.1f} |",
            f"| {number} | {share:.0%} malformed | {one.valid.count:,} | {one.valid.rate:,.0f} "
            f"| {one.valid.p50_ms:.2f} | {one.valid.p99_ms:.2f} | {codes} | {one.load[1]:.1f} |",
        ]
    rates = [one.valid.rate / one.clean.latency.rate for one in rounds]
    p99s = [one.valid.p99_ms / one.clean.latency.p99_ms for one in rounds]
    return [
        MALFORMED_HEADING,
        "",
        *([measured, ""] if measured else []),
        _paragraph(
            f"`python -m bench.ingest --malformed {share} --rounds {len(rounds)}`: the ingest "
            f"load above (32 clients, 20,000 requests, 1,000 threads, a fresh SQLite gateway "
            f"with no roles), with every {round(1 / share)}th request malformed — a lone "
            "surrogate or a NUL in the text, `1e999` or 2^63 in the context, the text nested "
            "200 deep, bytes that are not UTF-8, a lone surrogate in the author, JSON cut "
            "short — which the HTTP edge refuses with a 4xx (none may be a 5xx; every valid "
            "one must be stored). Each round measures a clean run on a fresh gateway, then the "
            "mixed run on another; the valid requests' rate is their count over the mixed "
            "run's whole time. Compare the rows within a round only: the 2 cores are shared "
            "with whatever else runs on the machine."
        ),
        "",
        "| round | run | valid requests | valid messages/s | p50 ms | p99 ms "
        "| refused: status (count) | load avg |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |",
        *rows,
        "",
        _paragraph(
            "Valid messages/s with malformed requests ÷ clean: "
            + ", ".join(f"**{r:.2f}**" for r in rates)
            + "; valid p99 ÷ clean p99: "
            + ", ".join(f"**{r:.2f}**" for r in p99s)
            + f" (per round). The malformed requests are {share:.0%} of all, so a throughput "
            f"ratio of {1 - share:.1f} would mean a refused request costs what a stored one "
            "does, 1.0 that it costs nothing. The load average is the machine's, over the "
            "minute before each run ended: the benchmark's own server and load generator "
            "account for about 1 to 1.5 of it, the rest is whatever else ran."
        ),
        "",
    ]


def recall_only(
    report: Path = REPORT,
    entries: int = RECALL_ENTRIES,
    threads: int = RECALL_THREADS,
    reads: int = RECALL_READS,
) -> list[str]:
    """Run the recall benchmark alone and write its section into `report`: over the section
    there, or after the others."""
    started = time.monotonic()
    result = recall.measure(entries, threads, reads)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only recall`, which "
        f"took {time.monotonic() - started:.0f} s, apart from the run at the top of this page."
    )
    section = _recall_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, RECALL_HEADING, section))
    return section


def fanout_only(
    report: Path = REPORT,
    conversations: int = FANOUT_CONVERSATIONS,
    rounds: int = FANOUT_ROUNDS,
) -> list[str]:
    """Run the fan-out benchmark alone and write its section into `report`: over the section
    there, or after the others."""
    started = time.monotonic()
    result = fanout.measure(conversations, rounds)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only fanout`, which "
        f"took {time.monotonic() - started:.0f} s, apart from the run at the top of this page."
    )
    section = _fanout_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, FANOUT_HEADING, section))
    return section


def sse_only(
    report: Path = REPORT,
    streams: int = SSE_STREAMS,
    messages: int = SSE_MESSAGES,
    reconnect: int = SSE_RECONNECT,
    missed: int = SSE_MISSED,
) -> list[str]:
    """Run the widget-stream benchmark alone and write its section into `report`: over the
    section there, or after the others."""
    started = time.monotonic()
    result = sse.measure(streams, messages, reconnect, missed)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only sse`, which "
        f"took {time.monotonic() - started:.0f} s, apart from the run at the top of this page."
    )
    section = _sse_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, SSE_HEADING, section))
    return section


def slack_only(
    report: Path = REPORT,
    rate: float = SLACK_RATE,
    seconds: float = SLACK_SECONDS,
    people: int = SLACK_PEOPLE,
    *,
    pace: float = 1.0,
) -> list[str]:
    """Run the Slack events benchmark alone and write its section into `report`: over the
    section there, or after the others."""
    started = time.monotonic()
    result = slack_events.measure(rate, seconds, people, pace=pace)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only slack`, which "
        f"took {time.monotonic() - started:.0f} s, apart from the run at the top of this page."
    )
    section = _slack_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, SLACK_HEADING, section))
    return section


def webhooks_only(
    report: Path = REPORT,
    rate: float = WEBHOOKS_RATE,
    seconds: float = WEBHOOKS_SECONDS,
    keys: int = WEBHOOKS_KEYS,
    events: int = WEBHOOKS_EVENTS,
    endpoints: int = WEBHOOKS_ENDPOINTS,
    *,
    flap_seconds: float = webhooks.FLAP_SECONDS,
) -> list[str]:
    """Run the webhooks benchmark alone and write its section into `report`: over the section
    there, or after the others."""
    started = time.monotonic()
    result = webhooks.measure(rate, seconds, keys, events, endpoints, flap_seconds=flap_seconds)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only webhooks`, which "
        f"took {time.monotonic() - started:.0f} s, apart from the run at the top of this page."
    )
    section = _webhooks_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, WEBHOOKS_HEADING, section))
    return section


def approvals_only(
    report: Path = REPORT,
    conversations: int = APPROVALS_CONVERSATIONS,
    setups: tuple[approvals.Setup, ...] = approvals.SETUPS,
) -> list[str]:
    """Run the approvals benchmark alone and write its section into `report`: over the section
    there, or after the others; then raise `approvals.Failed` if any run found a problem."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        results = approvals.measure_all(Path(tmp), conversations, setups)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only approvals`, "
        f"which took {time.monotonic() - started:.0f} s, apart from the run at the top of this "
        "page."
    )
    section = approvals_report.section(results, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, approvals_report.HEADING, section))
    approvals.fail_on_problems(results)
    return section


def traces_only(
    report: Path = REPORT,
    conversations: int = TRACES_CONVERSATIONS,
    total: int = TRACES_ROUND_TRIPS,
    rounds: int = TRACES_ROUNDS,
    single: int = traces.SINGLE,
) -> list[str]:
    """Run the tracing benchmark (the round trip with traces off, on, and sampled) alone and
    write its section into `report`: over the section there, or after the others."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        runs = traces.measure(Path(tmp), conversations, total, POSTERS, rounds, single=single)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only traces`, "
        f"which took {time.monotonic() - started:.0f} s, apart from the run at the top of this "
        "page."
    )
    section = traces.section(
        runs, measured=measured, conversations=conversations, total=total, posters=POSTERS
    )
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, traces.HEADING, section))
    return section


def console_only(
    report: Path = REPORT,
    conversations: int = CONSOLE_CONVERSATIONS,
    events: int = CONSOLE_EVENTS,
    reads: int = CONSOLE_READS,
) -> list[str]:
    """Run the console's pages benchmark alone and write its section into `report`: over the
    section there, or after the others."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = console.measure(Path(tmp), conversations, events, reads)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only console`, "
        f"which took {time.monotonic() - started:.0f} s, apart from the run at the top of this "
        "page."
    )
    section = console.section(result, measured=measured).splitlines()
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, console.HEADING, section))
    return section


def _with_section(text: str, heading: str, section: list[str]) -> str:
    """`text` with the section under `heading` replaced by `section`, or `section` at the end."""
    body = "\n".join(section)
    start = text.find(f"\n{heading}\n")
    if start < 0:
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + body
    after = text.find("\n## ", start + 1)
    if after < 0:
        return text[: start + 1] + body
    return text[: start + 1] + body.rstrip("\n") + "\n\n" + text[after + 1 :]


def _latency_cells(result: Latency | None) -> str:
    return f"{result.p50_ms:.2f} | {result.p99_ms:.2f}" if result else "n/a | n/a"


def _recall_section(result: recall.Result, *, measured: str = "") -> list[str]:
    ceiling = result.passes[recall.CEILING].latency
    filtered = result.passes[recall.FILTERED].latency
    repository = result.passes[recall.REPOSITORY].latency
    entries, reads = result.entries, ceiling.count
    threaded = entries - result.no_thread
    visible = threaded * (1 + result.shared_threads) / result.threads + result.no_thread
    verdict = "met" if repository.p99_ms < 10 else "**not met**"
    tenth, hundredth, tenths = entries // 1_000, entries // 100, entries // 10
    buckets = [
        (f"fewer than 0.1% (under {tenth:,})", 0, tenth),
        (f"0.1% to 1% ({tenth:,} to {hundredth - 1:,})", tenth, hundredth),
        (f"1% to 10% ({hundredth:,} to {tenths - 1:,})", hundredth, tenths),
        (f"10% or more ({tenths:,} and up)", tenths, float("inf")),
    ]
    rows = []
    for label, low, high in buckets:
        chosen = result.latency(recall.REPOSITORY, low, high)
        if chosen is not None:
            rows.append(
                f"| {label} | {chosen.count:,} "
                f"| {_latency_cells(result.latency(recall.CEILING, low, high))} "
                f"| {_latency_cells(result.latency(recall.FILTERED, low, high))} "
                f"| {_latency_cells(chosen)} |"
            )
    rare = [
        result.latency(name, 0, tenth) or result.latency(name)
        for name in (recall.CEILING, recall.REPOSITORY)
    ]
    overhead = rare[1].p50_ms - rare[0].p50_ms if rare[0] and rare[1] else 0.0
    heavy = sum(m >= tenths for m in result.matched)
    return [
        RECALL_HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(
            f"`python -m bench.recall`: one role's memory of {entries:,} entries, stored through "
            "the repository (`db.memory.store`, group commit, "
            f"{recall.CHUNK} stores in flight) in a fresh SQLite file, spread at random over "
            f"{result.threads:,} threads {{person:uN, role:{recall.ROLE}}}, except "
            f"{result.no_thread:,} stored outside any thread. {result.shared_threads:,} of the "
            f"threads ({recall.SHARED_THREADS:.0%}) have the memory policy "
            "`thread_only: false`, so their entries are shared; inside a thread about "
            f"{visible:,.0f} entries are visible (its own, the shared ones, those of no thread). "
            'Each entry is `{"kind": "note", "text": …}`, the text '
            f"{recall.WORDS_PER_NOTE[0]} to {recall.WORDS_PER_NOTE[1]} words drawn from a "
            f"made-up vocabulary of {recall.VOCABULARY:,} words with Zipf frequencies "
            f"(exponent {recall.ZIPF_EXPONENT:g}: the most frequent word is in "
            f"{result.top_word_share:.0%} of the entries). Storing them took "
            f"{result.store_seconds:.1f} s ({result.store_rate:,.0f} entries/s); the database "
            f"file is {_mib(result.database_bytes)} MiB. Then {reads:,} sequential queries, each "
            "in a random thread and made of one or two words of one of that thread's entries "
            "(so it finds at least that one), ask for the newest "
            f"{recall.LIMIT} matches. The ceiling is the same full-text query without the "
            "visibility filter, in SQL with stdlib sqlite3 (`memory_search MATCH`, joined to "
            "`memory_entries` on id, the role, newest first, LIMIT "
            f"{recall.LIMIT}); the middle row is that SQL with the visibility filter: the "
            "repository's statement, written out."
        ),
        "",
        "| recall (newest 10 matches in a thread) | p50 ms | p99 ms |",
        "| --- | ---: | ---: |",
        _row("ceiling: full-text query, no visibility filter, stdlib sqlite3", ceiling),
        _row("the same with the visibility filter, stdlib sqlite3", filtered),
        _row("`db.memory.recall` (in process)", repository),
        "",
        _paragraph(
            f"Repository ÷ ceiling: **{repository.p50_ms / ceiling.p50_ms:.2f}** at p50, "
            f"**{repository.p99_ms / ceiling.p99_ms:.2f}** at p99; the visibility filter "
            f"alone (filtered SQL ÷ ceiling): {filtered.p50_ms / ceiling.p50_ms:.2f} at p50, "
            f"{filtered.p99_ms / ceiling.p99_ms:.2f} at p99. Target ({RECALL_TARGET}): "
            f"{verdict}. Wrong answers: {result.wrong} (a query answered with nothing, or "
            "differently from the filtered SQL)."
        ),
        "",
        "By how many of the role's entries the query's words match, visible or not:",
        "",
        "| query matches | queries | ceiling p50 ms | ceiling p99 ms | filtered p50 ms "
        "| filtered p99 ms | recall p50 ms | recall p99 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        _paragraph(
            "Where the time goes. SQLite runs the statement the same way with the filter and "
            "without: FTS5 yields the entries whose text holds all the query's words, newest "
            "first (its rows are in the entries' order, and the statement orders by them), "
            "each is looked up in `memory_entries` by its primary key, the role (and "
            "visibility) test drops rows, and the scan stops at the LIMIT. So a query costs in "
            "proportion to how many matching entries it must pass over before it has ten it "
            "may see: little for a common word, most for a rare word whose few matches lie "
            f"mostly in other threads ({heavy / reads:.0%} of the queries here match "
            f"{tenths:,} entries or more, and cost no more than the rest). The visibility "
            "filter is three "
            "comparisons per matching row. The repository adds about "
            f"{overhead:.1f} ms to the rarest queries' p50: the hop to a reader thread, "
            "SQLAlchemy building and running the statement, and decoding the entries' JSON."
        ),
        "",
    ]


def _fanout_row(label: str, kind: str, rounds: list[fanout.Round]) -> str:
    """One round's row, or the medians of `rounds` (more than one)."""

    def med(value: Callable[[fanout.Round], float]) -> float:
        return statistics.median(value(r) for r in rounds)

    return (
        f"| {label} | {kind} | {med(lambda r: r.change_seconds) * 1000:,.1f} "
        f"| {med(lambda r: r.first_seconds) * 1000:,.0f} "
        f"| {med(lambda r: r.total_seconds) * 1000:,.0f} "
        f"| {med(lambda r: r.latency.p50_ms):,.0f} | {med(lambda r: r.latency.p99_ms):,.0f} "
        f"| {med(lambda r: r.rate):,.0f} "
        f"| {med(lambda r: r.settled_seconds) * 1000:,.0f} "
        f"| {med(lambda r: r.cpu_us_per_prompt):,.0f} "
        f"| {med(lambda r: r.delivered):,.0f} | {med(lambda r: r.twice):,.0f} |"
    )


def _fanout_section(result: fanout.Result, *, measured: str = "") -> list[str]:
    count, tasks, messages = result.conversations, result.of(fanout.TASK), result.of(fanout.MESSAGE)

    def median(kind: str, value: Callable[[fanout.Round], float]) -> float:
        return result.median(kind, value)

    task_total = median(fanout.TASK, lambda r: r.total_seconds)
    message_total = median(fanout.MESSAGE, lambda r: r.total_seconds)
    task_cpu = median(fanout.TASK, lambda r: r.cpu_us_per_prompt)
    message_cpu = median(fanout.MESSAGE, lambda r: r.cpu_us_per_prompt)
    task_first = median(fanout.TASK, lambda r: r.first_seconds) * 1000
    task_rate = median(fanout.TASK, lambda r: r.rate)
    cores = median(fanout.TASK, lambda r: r.cpu_seconds / (r.change_seconds + r.total_seconds))
    slowest = max(r.total_seconds for r in tasks) * 1000
    fastest = min(r.total_seconds for r in tasks) * 1000
    missing, twice = result.missing, result.twice
    delivery = (
        f"Every round prompted all {count:,} runs, none twice."
        if missing == 0 and twice == 0
        else f"Runs not prompted: **{missing:,}**; prompted twice with the same news: "
        f"**{twice:,}** (over all rounds)."
    )
    status = {1: "in_progress", 0: "open"}
    rows = []
    for task_round, message_round in zip(tasks, messages, strict=True):
        number = task_round.number
        rows.append(_fanout_row(str(number), f"task → {status[number % 2]}", [task_round]))
        rows.append(_fanout_row(str(number), "message to each", [message_round]))
    return [
        FANOUT_HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(
            "`python -m bench.fanout`: in process on a fresh SQLite file, the run host as "
            f"`rolecall serve` runs it (default limits: {result.limits.slots} turn slots, "
            "`ROLECALL_MAX_TURNS`) with one role, `watch`, whose `max_concurrent_turns` is raised "
            f"from its default 8 to {result.max_concurrent_turns} so that the host's slots are "
            "the limit (as in the round-trip benchmark). Its agent is the benchmark's own "
            "built-in agent: it writes down the monotonic time at which each prompt reaches "
            "each run, answers people's messages with their text and says nothing on task "
            f"news. {count:,} conversations {{person:uN, role:watch}}, one message each, "
            "answered, so every run exists and its session is awake; then every run subscribes "
            f"to one task (setup took {result.setup_seconds:.1f} s). Then {len(tasks)} rounds "
            "of each kind, alternating. Task: a person changes the task's status (one "
            "`db.tasks.update`, open → in_progress and back); latency runs from the update call "
            "returning (the change committed) to each run's prompt carrying the change in its "
            "task digest (`Prompt.tasks`). Message, the ceiling — the same fan-out through the "
            "message path: one message from each conversation's person, all posted at once "
            "(the writer commits them in batches of up to 256); latency runs from each post "
            "returning to its run's prompt, and the round's time from the first post being "
            "sent. After each round the benchmark waits until every run's cursor is past the "
            "news (its turn's end committed), so rounds do not overlap. CPU is the process's "
            "(all threads) from sending the change until every run was prompted."
        ),
        "",
        "| round | news | change committed ms | first run prompted ms | every run prompted ms "
        "| per-run p50 ms | per-run p99 ms | runs prompted/s | every turn ended ms "
        "| CPU µs/prompt | runs prompted | twice |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        _fanout_row("median", "task", tasks),
        _fanout_row("median", "message to each (ceiling)", messages),
        "",
        _paragraph(
            f"Task fan-out ÷ message fan-out, median time until every run was prompted: "
            f"**{task_total / message_total:.2f}** ({task_total * 1000:,.0f} ms against "
            f"{message_total * 1000:,.0f} ms; the task rounds ranged from {fastest:,.0f} to "
            f"{slowest:,.0f} ms); CPU per prompt: {task_cpu / message_cpu:.2f}. {delivery}"
        ),
        "",
        _paragraph(
            "Where the time goes. The change itself is one small commit (the task row and its "
            "event). The host's router learns of it from the writer's after-commit listener, "
            f"reads the task's {count:,} subscribers and nudges each of their runs; the "
            f"first run is prompted about {task_first:,.0f} ms after the commit. From then on "
            f"the fan-out is {count:,} turns queued for {result.limits.slots} slots, at about "
            f"{task_rate:,.0f} runs a second: each turn is one read on the event loop, shared "
            "with the other runs reading in the same loop iteration (the "
            "thread's news past the cursor, and the task news past the task cursor — a "
            "statement joining task events, subscriptions and tasks, each row decoded into the "
            "task and its event), the agent's call in the event loop, and the turn's end (the "
            "cursors and the turn's record with its prompt) committed by the writer in a batch "
            "with other turns' ends. Everything is in one process whose threads share one "
            f"interpreter lock: it used {cores:.1f} cores on average during the task rounds, "
            f"{task_cpu:,.0f} µs of CPU per prompt. A message turn does the same without the "
            f"task-news read, plus its share of the {count:,} messages' commits before it and "
            "its reply's commit after it."
        ),
        "",
    ]


def _sse_row(label: str, result: sse.Pass) -> str:
    return (
        f"| {label} | {result.open_seconds:.1f} | {result.everyone.p50_ms:,.0f} "
        f"| {result.everyone.p99_ms:,.0f} | {result.single.p50_ms:,.0f} "
        f"| {result.single.p99_ms:,.0f} | {result.posted.p50_ms:,.1f} "
        f"| {result.cpu_us_per_delivery(result.server_cpu):,.0f} "
        f"| {result.cpu_us_per_delivery(result.client_cpu):,.0f} | {_mib(result.rss_before)} "
        f"| {_mib(result.rss_open)} | {result.bytes_per_stream:,.0f} |"
    )


def _reconnect_row(label: str, result: sse.Pass) -> str:
    again = result.reconnect
    return (
        f"| {label} | {again.streams:,} | {again.missed} | {again.reopened.p50_ms:,.0f} "
        f"| {again.reopened.p99_ms:,.0f} | {again.caught_up_seconds * 1000:,.0f} "
        f"| {again.caught_up:,} |"
    )


def _sse_checks(result: sse.Result) -> str:
    gateway, ceiling = result.gateway.check, result.ceiling.check
    if gateway.clean and ceiling.clean:
        return (
            f"Every stream received every message exactly once, in seq order ({gateway.streams:,} "
            f"streams by {gateway.messages} messages, the reconnected ones across both their "
            "connections), on both servers."
        )
    return " ".join(
        f"{p.server}: missing {c.missing:,}, duplicates {c.duplicates:,}, out of order "
        f"{c.out_of_order:,}, never posted {c.unexpected:,}, bad frames {c.bad_frames:,}, "
        f"streams ended by the server {c.ended:,}, waits timed out {c.late:,}."
        for p, c in ((result.gateway, gateway), (result.ceiling, ceiling))
    )


def _sse_section(result: sse.Result, *, measured: str = "") -> list[str]:
    gateway, ceiling = result.gateway, result.ceiling
    count, away = gateway.streams, gateway.reconnect

    def ratio(value: Callable[[sse.Pass], float]) -> str:
        below = value(ceiling)
        return f"{value(gateway) / below:.1f}" if below > 0 else "n/a"

    def cores(p: sse.Pass, cpu: float) -> str:
        return f"{cpu / p.seconds:.1f}" if p.seconds > 0 else "n/a"

    return [
        SSE_HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(
            "`python -m bench.sse`: `rolecall serve` on a fresh SQLite file with one role, "
            f"`{sse.ROLE}`, that is never prompted: the messages are posted through the operator "
            f"API as the role (`POST /api/v1/threads/{{id}}/messages`, author `role:{sse.ROLE}`), "
            "and only people's messages start turns, so the fan-out is all that happens. One "
            f"anonymous widget session; {count:,} streams on its conversation "
            "(`GET /widget/v1/stream?token=…&after=…`) opened from the benchmark process with "
            f"aiohttp, {sse.OPEN_AT_ONCE} at a time (under the listen backlog of 128), all on "
            "127.0.0.1. Memory is the server's VmRSS before the streams and with all open. Then "
            f"one warm-up message and {result.messages} measured ones, posted one after another, "
            "each once the previous one had reached every stream (or after "
            f"{sse.DELIVERY_TIMEOUT:.0f} s). Latency runs from the POST's answer (the commit) to "
            'the client\'s read of a stream returning the frame; "every stream" is per message, '
            f"until the last stream had it (of {result.messages} messages, p99 is the slowest); "
            '"POST answered" runs from the POST being sent. Reconnect: '
            f"{away.streams:,} streams are closed, {away.missed} messages posted while they are "
            "away, then all of them reopened at once with `Last-Event-ID` (the last id each saw, "
            "on the URL first used, as a browser does), timed until the last of them had every "
            "missed message. The client parses every frame (CRLF lines, a blank line ends an "
            "event, its JSON's `seq` must equal its `id`) and checks, after one more message to "
            "every stream, that each stream has every message once and in order. The ceiling, "
            "measured the same way with the same client code: `python -m bench.sse --ceiling "
            "PORT`, a bare aiohttp server that keeps its streams in a list and, on a POST, "
            "answers it and then writes the same pre-encoded frame (a widget event of the same "
            "fields) to each; it replays its frames after `Last-Event-ID`. The client shares "
            "the machine's cores with the server: its own reading and parsing is inside every "
            "latency below, for both servers alike."
        ),
        "",
        "| server | opening all s | every stream p50 ms | every stream p99 ms "
        "| one delivery p50 ms | one delivery p99 ms | POST answered p50 ms "
        "| server CPU µs/delivery | client CPU µs/delivery | RSS before MiB "
        "| RSS with streams MiB | RSS bytes/stream |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        _sse_row("ceiling: bare aiohttp, one frame written to each stream", ceiling),
        _sse_row("rolecall serve", gateway),
        "",
        "| server | streams reconnecting | messages missed | reopened p50 ms | reopened p99 ms "
        "| all caught up ms | caught up |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        _reconnect_row("ceiling", ceiling),
        _reconnect_row("rolecall serve", gateway),
        "",
        _paragraph(
            "Gateway ÷ ceiling, time until every stream had a message: "
            f"**{ratio(lambda p: p.everyone.p50_ms)}** at p50, "
            f"**{ratio(lambda p: p.everyone.p99_ms)}** at p99; one delivery: "
            f"{ratio(lambda p: p.single.p50_ms)} at p50; server CPU per delivery: "
            f"**{ratio(lambda p: p.cpu_us_per_delivery(p.server_cpu))}**; RSS per open stream: "
            f"{ratio(lambda p: p.bytes_per_stream)}; the reconnected streams all caught up: "
            f"{ratio(lambda p: p.reconnect.caught_up_seconds)}. {_sse_checks(result)} "
            f"While the measured messages went out (gateway pass: {gateway.seconds:.1f} s), the "
            f"gateway used {cores(gateway, gateway.server_cpu)} cores on average, the client "
            f"{cores(gateway, gateway.client_cpu)} and other processes on the machine "
            f"{cores(gateway, gateway.others_cpu)} (ceiling pass: "
            f"{cores(ceiling, ceiling.server_cpu)}, {cores(ceiling, ceiling.client_cpu)} and "
            f"{cores(ceiling, ceiling.others_cpu)})."
        ),
        "",
        *_sse_where_the_time_goes(result),
    ]


def _sse_where_the_time_goes(result: sse.Result) -> list[str]:
    gateway, ceiling = result.gateway, result.ceiling
    server, bare = (p.cpu_us_per_delivery(p.server_cpu) for p in (gateway, ceiling))
    client, client_bare = (p.cpu_us_per_delivery(p.client_cpu) for p in (gateway, ceiling))
    count = gateway.streams
    return [
        _paragraph(
            "Where the time goes. Each side is one Python event loop, so at best one core "
            f"each. Per delivery the gateway used {server:,.0f} µs of CPU, the ceiling "
            f"{bare:,.0f} µs; the client {client:,.0f} µs in the gateway's pass and "
            f"{client_bare:,.0f} µs in the ceiling's (there the frames come in one burst, so a "
            "turn of its loop finds many sockets ready). At this rate one message to "
            f"{count:,} streams is {server * count / 1000:,.0f} ms of the gateway's CPU and "
            f"{bare * count / 1000:,.0f} ms of the ceiling's, then {client * count / 1000:,.0f} "
            "ms of the client's. Per event the gateway renders the widget's frame once per "
            "viewer (`Frames` in channels/web/present.py) and each stream writes those bytes "
            "as they are; each stream's loop waits on its own queue alone, the connection "
            "closing putting a marker in it. What remains per stream is one turn of the event "
            "loop, one `put_nowait` from the commit listener and one socket write — the part "
            "the ceiling pays too. (An earlier version, which wrapped every wait in a new task "
            "with an `asyncio.wait` on the connection's close and rendered the event again for "
            "every stream, spent 128 to 160 µs a delivery.) On "
            "the client's side (py-spy on the benchmark process), about half is aiohttp reading "
            "(the socket, HTTP chunks, its stream reader waking each stream's task), a fifth is "
            "this benchmark's SSE parsing and the JSON decoding of every frame, the rest is "
            "waiting. So the ceiling's latencies are mostly the client's own reading, and the "
            "ratios of latency understate what the gateway spends (the ratio of CPU does not): "
            "the gateway is bound by its one core, where it writes about "
            f"{1e6 / server if server else 0:,.0f} frames a second. The "
            f"gateway's POST is answered in {gateway.posted.p50_ms:,.0f} ms at p50 here (the "
            f"ceiling's in {ceiling.posted.p50_ms:,.0f} ms, committing nothing), against about 3 "
            f"ms with 20 streams open (measured apart): with {count:,} streams open the "
            "commit's round trip itself grows, which this run does not explain; "
            + (
                "no stream read a message before its POST's answer."
                if gateway.early == 0
                else f"{gateway.early:,} deliveries were read before their POST's answer."
            )
        ),
        "",
        _paragraph(
            f"Memory. An open stream costs the gateway about {gateway.bytes_per_stream:,.0f} "
            f"bytes of RSS, the ceiling {ceiling.bytes_per_stream:,.0f}. Both hold aiohttp's "
            "connection, request and response per stream; the gateway also holds the handler's "
            "coroutines, aiohttp-sse's ping task, the task waiting for the connection to close, "
            "the subscription's queue, and whatever the opening left in Python's allocator "
            "(each opening checks "
            "the session token and reads the person, the thread and the timeline after "
            "`after`). Reconnecting streams go through the same: a new connection, the token, "
            "those reads, then the catch-up page; the ceiling only replays frames it holds."
        ),
        "",
    ]


def _acks_row(server: str, name: str, acks: slack_events.Acks) -> str:
    errors = ", ".join(f"{n:,} {kind}" for kind, n in sorted(acks.errors.items())) or "0"
    return (
        f"| {server} | {name} | {acks.events:,} + {acks.retries:,} "
        f"| {acks.acknowledged:,} + {acks.retries_acknowledged:,} | {acks.rate:,.0f} "
        f"| {acks.latency.p50_ms:,.2f} | {acks.latency.p99_ms:,.2f} | {acks.max_ms:,.1f} "
        f"| {acks.late:,} | {errors} | {acks.unsent:,} | {acks.lag.p99_ms:,.2f} "
        f"| {acks.cpu_us_per_event:,.0f} |"
    )


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.1f}"


def _slack_checks(result: slack_events.Result) -> str:
    d, retries = result.delivery, result.first.retries_sent + result.steady.retries_sent
    if result.clean:
        return (
            f"Every event sent was committed once and answered once in Slack ({d.expected:,} "
            f"events, {retries:,} of them delivered again as Slack's retries): no reply "
            "missing, none posted twice, no message committed twice."
        )
    return (
        f"Of {d.expected:,} events sent ({retries:,} of them delivered again as Slack's "
        f"retries): replies missing {d.missing:,}, posted twice {d.duplicate_posts:,}; person "
        f"messages committed {d.committed:,}, twice {d.duplicate_messages:,}; replies "
        f"committed twice {d.duplicate_replies:,}."
    )


def _slack_section(result: slack_events.Result, *, measured: str = "") -> list[str]:
    first, steady, ceiling, d = result.first, result.steady, result.ceiling, result.delivery
    events, ev = steady.events, slack_events
    meets = steady.latency.p99_ms < 100 and result.clean and not steady.unsent
    verdict = "met" if meets else "**not met**"
    cores, bare = steady.cores, ceiling.cores
    cost = steady.cpu_us_per_event / ceiling.cpu_us_per_event
    behind = steady.lag.p99_ms > 100 or steady.unsent > 0
    during = d.posted_while_sending / d.sending_seconds if d.sending_seconds > 0 else 0.0
    after = (d.steady_posted - d.posted_while_sending) / max(d.drain_seconds, 1e-9)
    calls = ", ".join(f"`{m}` {n:,}" for m, n in sorted(d.calls.items(), key=lambda c: -c[1]))
    refused = ", ".join(f"`{m}` {n:,}" for m, n in d.refused.items()) or "none"
    bound = d.closest_seconds < result.pace * 1.05
    pacing = f"The closest two posts to one DM were {d.closest_seconds:,.2f} s apart, " + (
        "so pacing may have held some back." if bound else "so pacing never held one back."
    )
    return [
        SLACK_HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(
            "`python -m bench.slack_events`: three servers on 127.0.0.1, each in a process of "
            "its own. The fake Slack (`python -m bench.slack_events --fake PORT`): `FakeSlack` "
            f"of tests/slack/fake_slack.py with {result.people:,} people; a control port hands "
            "out the events its builders make (each person's message kept in their DM, as "
            "Slack keeps it) and, at the end, the Web API calls it answered. `rolecall serve` "
            f"on a fresh SQLite file with one role, `{ev.ROLE}` (the built-in agent that "
            "answers each person message with its text; `max_concurrent_turns: 64`), whose "
            "manifest's `slack:` section (`mode: http`) names two settings set in the server's "
            "environment to the fake's signing secret and bot token; `ROLECALL_SLACK_API_URL` "
            f"points at the fake, `ROLECALL_SLACK_PACE={result.pace:g}`. The ceiling "
            "(`python -m bench.slack_events --ceiling PORT`): a bare aiohttp handler that "
            "checks the same signature with slack_sdk's `SignatureVerifier` and answers 200, "
            "no database. The load comes from the benchmark process and is open: event i of a "
            f"pass is due at i/{result.rate:,.0f} s and is written when due on the first free "
            f"one of {result.connections} keep-alive connections (raw HTTP/1.1, signed over "
            "the exact body), whatever became of earlier ones; latency runs from when it was "
            "due to the 200, so waiting for a free connection counts (client lag, below). "
            "Each event is a `message.im` `event_callback` made by the fake (its own "
            "`event_id`, text and blocks) from the next person round-robin, so each person "
            f"writes once every {result.people / result.rate:g} s; one event in "
            f"{ev.RETRY_EVERY} is delivered again {ev.RETRY_AFTER:g} s after it was due, as "
            "Slack's retry (the same body, `X-Slack-Retry-Num: 1`). First contact: one event "
            "from each person (the gateway asks `users.info` and makes the person, the "
            "conversation and its binding to the DM before the 200); then, once those are "
            f"answered in Slack, the steady pass: {events:,} events over "
            f"{result.seconds:g} s. Nothing is sent later than {ev.PASS_BUDGET:.0f} s after the "
            "last due time; replies are waited for until all came, none came for "
            f"{ev.QUIET:.0f} s, or {ev.REPLY_BUDGET:.0f} s after the last event. Replies are "
            "the `chat.postMessage` calls the fake accepted; what the gateway committed is "
            "read from its committed-event stream through the operator API "
            "(`GET /api/v1/events`)."
        ),
        "",
        "| server | pass | events + retries | acknowledged | acknowledged/s | p50 ms | p99 ms "
        "| max ms | after 3 s | errors | not sent | client lag p99 ms | server CPU µs/event |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |",
        _acks_row("ceiling: signature check, 200", "first", result.ceiling_first),
        _acks_row("ceiling: signature check, 200", "steady", ceiling),
        _acks_row("rolecall serve", "first contact", first),
        _acks_row("rolecall serve", "steady", steady),
        "",
        "| events sent | replies posted | missing | posted twice | messages committed "
        "| committed twice | replies committed twice | event → reply p50 s | event → reply p99 s "
        "| last reply after the last event s | gateway CPU µs/reply |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {d.expected:,} | {d.posted:,} | {d.missing:,} | {d.duplicate_posts:,} "
        f"| {d.committed:,} | {d.duplicate_messages:,} | {d.duplicate_replies:,} "
        f"| {d.reply.p50_ms / 1000:,.2f} | {d.reply.p99_ms / 1000:,.2f} "
        f"| {d.drain_seconds:,.1f} | {d.cpu_us_per_reply:,.0f} |",
        "",
        _paragraph(
            "Gateway ÷ ceiling, steady pass: time to the 200 "
            f"**{_times(steady.latency.p50_ms / ceiling.latency.p50_ms)}** at p50, "
            f"**{_times(steady.latency.p99_ms / ceiling.latency.p99_ms)}** at p99; "
            f"acknowledged/s **{steady.rate / ceiling.rate:.2f}**; server CPU per event "
            f"acknowledged while the events came {cost:,.1f} "
            f"(per reply, from the steady pass's start to its last reply: "
            f"{d.cpu_us_per_reply / ceiling.cpu_us_per_event:,.1f}). Target ({SLACK_TARGET}): "
            f"{verdict}. {_slack_checks(result)} {steady.late:,} of the steady pass's 200s came "
            "after 3 s, when Slack would have given up and delivered the event again. Web API "
            f"calls the fake answered: {calls}; refused: {refused}. While the steady pass's "
            f"events came ({steady.seconds:.0f} s) the gateway used {cores.server:.2f} cores on "
            f"average, the fake Slack {cores.fake:.2f}, the load generator {cores.client:.2f} "
            f"and other processes on the machine {cores.others:.2f} (ceiling's pass, "
            f"{ceiling.seconds:.0f} s: {bare.server:.2f}, {bare.fake:.2f}, {bare.client:.2f} and "
            f"{bare.others:.2f}). The gateway ran with "
            f"`ROLECALL_SLACK_PACE={result.pace:g}`"
            + (
                " (the default): each person has one DM and writes at most once a second, "
                "and the delivery worker goes through the replies in order, so two replies to "
                "one DM are due a second apart or more. "
                if result.pace == 1
                else ". "
            )
            + pacing
        ),
        "",
        _paragraph(
            f"Where the time goes. While the events came the gateway used {cores.server:.1f} cores "
            "(one Python process; its threads share one interpreter lock) and acknowledged "
            f"{steady.rate:,.0f} requests a second (retries included) of the "
            f"{result.rate * (1 + 1 / ev.RETRY_EVERY):,.0f} due"
            + (
                ": it fell behind, requests waited for a free connection (the client lag) and "
                "the time to the 200 is mostly that wait. "
                if behind
                else ". "
            )
            + "Per event acknowledged the gateway spends about "
            f"{steady.cpu_us_per_event:,.0f} µs "
            "of CPU: bolt's dispatch with the signature check, the handler, the person's message "
            "with its delivery record in a write batch (`SayFromSlack`, a commit with an fsync), "
            "the echo turn with its own commit, and the reply's post. Earlier versions, "
            "profiled with py-spy (`--gil`, not part of this run), spent more than a quarter of "
            'their time on the "working…" status (two `assistant.threads.setStatus` calls a '
            "turn), opened a new TCP connection for every Web API call, read three times per "
            "reply, built the delivery's statements (and a savepoint) for every message, and "
            "had the SDK format a debug line of every call's arguments with debug logging off; "
            "now the status is shown only once a turn has run a second, every Web API call "
            "shares one connection pool, each statement is built once, and the Slack thread a "
            "reply belongs in is known from the stream the worker follows. Replies: the "
            "delivery worker reads a page of committed events and posts to its DMs at once (up "
            "to 16; each DM's posts in order and paced), each reply after one read (was the "
            "message posted already? — after a restart, or by another replica) and followed by "
            "the commit of its ts. While the events came it posted "
            f"{during:,.0f} replies a second; once they stopped, {after:,.0f} a second; the last "
            f"reply came {d.drain_seconds:,.0f} s after the last event. The gateway is bound by "
            "its one interpreter: the time to the 200 stays short only while the CPU it spends "
            "per event — committing the person's message, running a turn and posting a reply — "
            "times the rate stays well under one core, which at 500 events a second it barely "
            "does on this machine."
        ),
        "",
    ]


def acp_only(
    report: Path = REPORT,
    conversations: int = ACP_CONVERSATIONS,
    idle_sleep_after: float = ACP_IDLE_SLEEP,
) -> list[str]:
    """Run the ACP sleep-and-wake benchmark alone and write its section into `report`: over the
    section there, or after the others."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        result = acp_sleep.measure(Path(tmp), conversations, idle_sleep_after)
    measured = (
        f"Measured {today()} on {machine()} by `python -m bench.run_all --only acp`, which "
        f"took {time.monotonic() - started:.0f} s, apart from the run at the top of this page."
    )
    section = _acp_section(result, measured=measured)
    text = report.read_text() if report.exists() else ""
    report.write_text(_with_section(text, ACP_HEADING, section))
    return section


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None or seconds != seconds else f"{seconds * 1000:,.1f}"


def _counts(found: dict[str, int]) -> str:
    return ", ".join(f"{count:,} {name}" for name, count in sorted(found.items())) or "none"


def _ms_cell(ms: float) -> str:
    return f"{ms:,.2f}" if ms < 100 else f"{ms:,.0f}"


def _acp_cells(result: Latency | None) -> str:
    return f"{_ms_cell(result.p50_ms)} | {_ms_cell(result.p99_ms)}" if result else "n/a | n/a"


def _acp_row(p: acp_sleep.Pass) -> str:
    lat, turn, agent = p.latency, p.turn, p.agent
    return (
        f"| {p.name} | {p.sent:,} | {p.missing:,} | {_acp_cells(lat)} "
        f"| {_ms_cell(turn.p50_ms) if turn else 'n/a'} | {_acp_cells(agent)} "
        f"| {p.overhead:,.0f} | {p.seconds:,.1f} | {_cpu_cell(p.gateway_cpu)} "
        f"| {_cpu_cell(p.agents_cpu)} |"
    )


def _cpu_cell(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds:,.1f}"


def _cpu_ms(seconds: float, turns: int) -> str:
    return f"{seconds / max(turns, 1) * 1000:,.1f}"


def _acp_section(result: acp_sleep.Result, *, measured: str = "") -> list[str]:
    first, warm, wake = result.first, result.warm, result.wake
    n = result.conversations
    missing = first.missing + warm.missing + wake.missing
    failed = {
        p.name: {k: v for k, v in p.outcomes.items() if k != "replied"} for p in (first, warm, wake)
    }
    failed = {name: found for name, found in failed.items() if found}
    stages = [
        f"| {label} | {_ms(first.stages.get(key))} | {_ms(warm.stages.get(key))} "
        f"| {_ms(wake.stages.get(key))} |"
        for key, label in acp_sleep.STAGES
    ]
    spawn = wake.stages.get("spawn", float("nan"))
    wake_p50 = wake.latency.p50_ms / 1000 if wake.latency else float("nan")
    warm_gateway = sum(warm.stages.get(k, 0.0) for k in ("queued", "after_prompt", "commit"))
    agent_cpu = wake.agents_cpu / max(wake.sent, 1)
    cores = os.cpu_count() or 1
    per_close = (result.asleep_after - result.idle_sleep_after) / max(result.alive_after_replies, 1)
    return [
        ACP_HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(
            f"`python -m bench.acp_sleep`: `rolecall serve` on a fresh SQLite file with one role, "
            "`agent`, of kind `acp`, backed by the tests' fake ACP agent "
            "(tests/runtimes/fake_acp_agent.py `--load`: a Python program on the "
            "`agent-client-protocol` package that can load its sessions), "
            f"`idle_sleep_after: {result.idle_sleep_after:g}`, `max_processes` and "
            f"`max_concurrent_turns` {n + 16}, `turn_timeout: {acp_sleep.TURN_TIMEOUT}`. "
            f"{n:,} conversations {{person:uN, role:agent}}; each pass posts one person message "
            f"to every conversation at once (from {acp_sleep.POSTERS} connections) and waits for "
            f"every reply, up to {acp_sleep.PASS_DEADLINE:.0f} s. The message is `say …`, which "
            "the fake writes back as its reply, a word a chunk, with no MCP call; the fake "
            "journals the seconds each prompt took it (its own time). First contact: the run is "
            "created and its session started (process spawn, `initialize`, `session/new`, the "
            "opening prompt). Warm: once every session has slept, "
            f"{acp_sleep.WARM_SAMPLE} conversations one at a time, on a quiet machine: a "
            "message that wakes the agent, then the measured one while its process is alive "
            "(sent to all 200 straight after first contact, the turns would find their "
            "sessions asleep: 200 cold starts keep both cores busy far longer than idle sleep; "
            "the warm pass's CPU is not told apart from its wake-ups'). Then the benchmark "
            "waits until no agent process (a living child of the gateway, read from /proc every "
            f"{acp_sleep.SAMPLE_EVERY:g} s) is left, and wakes every conversation: spawn, "
            "`initialize`, `session/load`, the prompt. Latency is the gateway's own, from the "
            "person message's commit to the reply's commit (the `at` of both events, read on "
            "the committed-event stream); the turn's duration is its record's "
            "(`GET /api/v1/runs/{id}/turns`: started to finished)."
        ),
        "",
        "| pass | conversations | replies missing | commit → reply p50 ms | p99 ms "
        "| turn as recorded p50 ms | agent's own p50 ms | p99 ms | ÷ agent's own (p50) "
        "| pass s | gateway CPU s | agents' CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        _acp_row(first),
        _acp_row(warm),
        _acp_row(wake),
        "",
        _paragraph(
            f"Agent processes alive at peak: **{result.peak_processes}**; once the warm "
            f"replies were in: {result.alive_after_replies} (their RSS together "
            f"{result.agent_rss / 2**20:,.0f} MiB); after idle sleep: "
            f"**{result.alive_after_sleep}**, {result.asleep_after:.1f} s after the last warm "
            f"reply (sessions then: {_counts(result.sessions_after_sleep)}), about "
            f"{per_close:,.2f} s a process past `idle_sleep_after`. In the warm pass "
            f"{sum(warm.opened.values()):,} turns found their session already asleep and "
            "woke it; the warm stages below are over the others. Wake latency "
            f"(commit → reply): **{_acp_cells(wake.latency).replace(' | ', ' ms p50, ')} ms "
            f"p99**; first contact: {_acp_cells(first.latency).replace(' | ', ' ms p50, ')} "
            f"ms p99. Agent sessions opened: first contact {_counts(first.opened)}; wake "
            f"{_counts(wake.opened)}. "
            f"Replies missing: {missing}"
            + (
                "; turns not replied: "
                + "; ".join(f"{name} {_counts(found)}" for name, found in failed.items())
                + "."
                if failed
                else "; every turn replied."
            )
        ),
        "",
        _paragraph(
            "Median of each stage, ms (from the turns' records, the events and the fake's "
            "journal; the clocks are the same machine's):"
        ),
        "",
        "| stage | first contact | warm | wake |",
        "| --- | ---: | ---: | ---: |",
        *stages,
        "",
        _paragraph(
            f"Where the time goes. Cold and waking, a turn is almost all the agent's program "
            f"starting: waking, {spawn:,.1f} s of the median {wake_p50:,.1f} s pass between "
            "the turn's start and the fake's first line of its own (fork and exec, the "
            "interpreter, its imports: `acp`, `mcp`, `httpx2`, pydantic). Alone on an idle "
            f"machine the fake starts in {result.fake_start:,.2f} s; here {n:,} start at once "
            f"on {cores} cores, each using about {agent_cpu:,.2f} s of CPU in the wake pass, so "
            f"they queue for the CPU: the wake pass's agents used {wake.agents_cpu:,.0f} "
            f"CPU-seconds ({wake.agents_cpu / cores:,.0f} s of all {cores} cores) and the gateway "
            f"{wake.gateway_cpu:,.0f}, in a pass of {wake.seconds:,.0f} s. `initialize`, "
            "opening the session and the prompt itself take milliseconds. The gateway is one "
            f"process among up to {n:,} runnable ones, and Linux shares the CPU by thread, so "
            "while they start its own steps wait for the CPU too: the median message waited "
            f"{first.stages.get('queued', 0):,.1f} s in first contact and "
            f"{wake.stages.get('queued', 0):,.1f} s waking before its turn started (routing "
            "and the run's read, a moment of CPU each), and the spawns come late. Since the "
            "write batches' statements and the turns' reads moved onto the event loop (for "
            "the round trips' sake), nearly all of the gateway's work is one thread's, which "
            "here gets one share of the CPU among the agents' hundreds of threads where two "
            "used to share the work: measured on one machine minutes apart (2026-11-30), the "
            "gateway's "
            "steps around a first-contact turn (the prompt reaching the agent, the answer to "
            "the turn's end, the reply's commit) took about 0.4, 0.2 and 0.4 s at p50 before "
            "that change and 2.0, 2.3 and 1.2 s after, the whole first-contact pass 179 s "
            "against 212 to 225 s; warm turns took about as long (commit to reply 4.9 ms at "
            "p50 before, 5.1 to 5.7 ms after). In CPU the "
            f"gateway's part is small: {_cpu_ms(first.gateway_cpu, first.sent)} ms a turn in "
            f"first contact (the warm turns among them), "
            f"{_cpu_ms(wake.gateway_cpu, wake.sent)} waking, against "
            f"{_cpu_ms(wake.agents_cpu, wake.sent)} ms of the agents' a waking turn. "
            "Warm, the gateway's share of the time is what is left around the agent's own: "
            "from the message's commit to the turn's start (routing, the run's read, the "
            "prompt's rendering), from the agent's answer to the turn's end, and the reply's "
            f"commit, together {warm_gateway * 1000:,.1f} ms at the medians against the agent's "
            f"{warm.agent.p50_ms if warm.agent else float('nan'):,.1f} ms, one turn at a time "
            "on a quiet machine. The ratios to the agent's own time are large because the fake "
            "does almost "
            "nothing; a real agent's prompt takes seconds (a model's answer), against which the "
            "warm overhead is small and the cold start is the program's own start (Node for "
            "Claude's adapter). Sleeping: the host's idle sweep (`sleep_idle` in "
            "core/engine/host/host.py) closes every idle session at once, and an ACP "
            "session's close "
            "waits for its process to exit after its input ends (up to 2 s, then SIGTERM, "
            f"then SIGKILL); the {result.alive_after_replies:,} processes alive after the warm "
            f"replies had all ended {result.asleep_after:,.1f} s after the last one."
        ),
        "",
    ]


def _hook_acks_row(server: str, acks: webhooks.Acks) -> str:
    errors = ", ".join(f"{n:,} {kind}" for kind, n in sorted(acks.errors.items())) or "0"
    return (
        f"| {server} | {acks.deliveries:,} + {acks.repeats:,} "
        f"| {acks.accepted:,} + {acks.repeats_accepted:,} | {acks.rate:,.0f} "
        f"| {acks.latency.p50_ms:,.2f} | {acks.latency.p99_ms:,.2f} | {acks.max_ms:,.1f} "
        f"| {errors} | {acks.unsent:,} | {acks.lag.p99_ms:,.2f} | {acks.cpu_us_per_send:,.0f} |"
    )


def _drain_row(drain: webhooks.Drain, ceiling: webhooks.Drain | None) -> str:
    latency = drain.latency
    name = f"`/{drain.name}`" + (" (flapping)" if drain.flapping else "")
    return (
        f"| {name} | {drain.received:,} | {drain.requests:,} | {drain.failed:,} "
        f"({drain.retry_after:,}) | {drain.duplicates:,} | {drain.missing:,} "
        f"| {drain.out_of_order:,} | {drain.bad_signatures:,} | {drain.seconds:,.1f} "
        f"| {_latency_cells(latency)} | {ceiling.seconds if ceiling else float('nan'):,.2f} |"
    )


def _webhooks_section(result: webhooks.Result, *, measured: str = "") -> list[str]:
    inbound, out = result.inbound, result.outbound
    gateway, bare, done = inbound.gateway, inbound.ceiling, inbound.processed
    meets = done.clean and not gateway.errors and not gateway.unsent
    verdict = "met" if meets else "**not met**"
    ceilings = {d.name: d for d in out.ceiling}
    steady = [d for d in out.drains if not d.flapping]
    flapping = [d for d in out.drains if d.flapping]
    delivered = max(out.delivered, 1)
    cpu_per = out.cpu.gateway / delivered * 1e6
    return [
        WEBHOOKS_HEADING,
        "",
        *([_paragraph(measured), ""] if measured else []),
        _paragraph(
            "`python -m bench.webhooks` ([webhooks.md](webhooks.md)). **Inbound**: `rolecall "
            f"serve` on a fresh SQLite file with one source, `{webhooks.SOURCE}` (`kind: "
            f"standard`, its secret in the setting `{webhooks.SECRET_SETTING}`, in a sources "
            f"directory of its own). {inbound.rate * inbound.seconds:,.0f} deliveries at "
            f"{inbound.rate:,.0f}/s for {inbound.seconds:g} s, the generic shape about "
            f"{inbound.keys:,} items round-robin (the first delivery about an item creates its "
            "task; each carries a comment of its own), signed with the `standardwebhooks` "
            f"package before the pass; one in {webhooks.REPEAT_EVERY} is sent again with the "
            "same `webhook-id` and body, alternately at once (racing the first on another "
            f"connection) and {webhooks.REPEAT_LATER:g} s later. The load is open: delivery i "
            f"is due at i/{inbound.rate:,.0f} s and written when due on the first free one of "
            f"{inbound.connections} keep-alive connections (raw HTTP/1.1); latency runs from "
            "when it was due to the 2xx. Afterwards every task and its history are read through "
            "the operator API (`GET /api/v1/tasks`, `GET /api/v1/tasks/{id}`). The ceiling "
            "(`python -m bench.webhooks --ceiling PORT`): a bare aiohttp handler that verifies "
            "the same signature with `standardwebhooks` and answers 204, no database, fed the "
            "same requests by the same client."
        ),
        "",
        "| server | deliveries + repeats | answered 2xx | 2xx/s | p50 ms | p99 ms | max ms "
        "| errors | not sent | client lag p99 ms | server CPU µs/request |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        _hook_acks_row("ceiling: signature check, 204", bare),
        _hook_acks_row("rolecall serve", gateway),
        "",
        _paragraph(
            "Gateway ÷ ceiling: time to the 2xx "
            f"**{_times(gateway.latency.p50_ms / bare.latency.p50_ms)}** at p50, "
            f"**{_times(gateway.latency.p99_ms / bare.latency.p99_ms)}** at p99; 2xx/s "
            f"**{gateway.rate / bare.rate:.2f}**; server CPU per request "
            f"**{gateway.cpu_us_per_send / bare.cpu_us_per_send:,.1f}**. Checked against the "
            f"tasks: {done.tasks:,} tasks for {done.items:,} items (created twice: "
            f"{done.created_twice:,}); comments of deliveries answered 2xx {done.comments:,} of "
            f"{gateway.accepted:,}, missing {done.missing:,}; **duplicates processed "
            f"{done.duplicates:,}**; comments of deliveries never answered 2xx "
            f'{done.unanswered:,}; requests answered `"duplicate": true` '
            f"{gateway.answered_duplicate:,} (repeats sent: {gateway.repeats:,}). Target "
            f"({WEBHOOKS_TARGET}): p99 {gateway.latency.p99_ms:,.1f} ms; {verdict}. While the "
            f"deliveries came ({gateway.seconds:.1f} s) the gateway used "
            f"{gateway.server_cpu / max(gateway.seconds, 1e-9):.2f} cores on average, other "
            "processes on the machine "
            f"{gateway.others_cpu / max(gateway.seconds, 1e-9):.2f}, this "
            f"client {gateway.client_cpu / max(gateway.seconds, 1e-9):.2f} (ceiling's pass: "
            f"{bare.others_cpu / max(bare.seconds, 1e-9):.2f} and "
            f"{bare.client_cpu / max(bare.seconds, 1e-9):.2f})."
        ),
        "",
        _paragraph(
            f"**Outbound**: {out.endpoints} endpoints registered for `message` events "
            "(`POST /api/v1/endpoints`) on a gateway with `ROLECALL_ENDPOINTS_ALLOW_PRIVATE=true` "
            f"and a backoff of {webhooks.BACKOFF_BASE:g} s to {webhooks.BACKOFF_CAP:g} s, "
            "pointing at receivers in a process of their own (`python -m bench.webhooks "
            "--receivers PORT`: one aiohttp server, a path per endpoint, each verifying every "
            "request with its endpoint's secret with `standardwebhooks`, deduplicating by "
            "`webhook-id`, checking that `position` only grows, timing each event's first "
            f"arrival). `/e0` flaps for {out.flap_seconds:g} s from its first request: every "
            f"other request fails, with a 500 or, one failure in {webhooks.RETRY_AFTER_EVERY}, a "
            f"429 with `Retry-After: 1`. Then {out.events:,} messages are posted through the "
            f"operator API as the role `{webhooks.ROLE}` (a role's messages start no turns) by "
            f"{webhooks.POSTERS} posters over {webhooks.THREADS} conversations, as fast as they "
            "are answered. Times run from the first post; commit → arrival from the post's "
            "answer to the event's first arrival at the receiver (one monotonic clock). The "
            "ceiling: the same receivers, reset and none flapping, fed by this process with the "
            "bodies `/e1` accepted, in the same order, signed before the pass with each "
            "endpoint's secret, one request at a time per endpoint (aiohttp, one keep-alive "
            "connection each), all endpoints at once."
        ),
        "",
        "| endpoint | events | requests | failed on purpose (429) | duplicates | missing "
        "| out of order | bad signatures | drain s | commit → arrival p50 ms | p99 ms "
        "| ceiling drain s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(_drain_row(d, ceilings.get(d.name)) for d in out.drains),
        "",
        _paragraph(
            f"{out.events:,} messages were committed in {out.post_seconds:.1f} s "
            f"({out.events / max(out.post_seconds, 1e-9):,.0f}/s, the endpoints' workers "
            "delivering meanwhile). "
            + (
                f"Every endpoint had every event **{out.seconds:.1f} s** after the first post "
                if not any(d.missing for d in out.drains)
                else "Not every endpoint got every event; the last arrival came "
                f"{out.seconds:.1f} s after the first post "
            )
            + f"(**{out.rate:,.0f} deliveries/s** overall); the steady endpoints drained in "
            f"{min(d.seconds for d in steady):.1f} to {max(d.seconds for d in steady):.1f} s"
            + (
                f", the flapping one in {flapping[0].seconds:.1f} s "
                f"({flapping[0].failed:,} failures on purpose)"
                if flapping
                else ""
            )
            + f". The ceiling delivered the same {sum(d.received for d in out.ceiling):,} "
            f"requests in {out.ceiling_seconds:.1f} s (**{out.ceiling_rate:,.0f}/s**): gateway ÷ "
            f"ceiling **{out.rate / max(out.ceiling_rate, 1e-9):.2f}** in deliveries/s. "
            + (
                "No duplicates, nothing missing, nothing out of order, every signature valid. "
                if out.clean
                else "See the table for what went wrong. "
            )
            + "The gateway's view at the end: "
            + ", ".join(f"`/{n}` {s}" for n, s in out.statuses.items())
            + f". Over the pass the gateway used {out.cpu.gateway:.1f} s of CPU "
            f"({cpu_per:,.0f} µs per delivery), the receivers {out.cpu.receivers:.1f} s, this "
            f"process {out.cpu.client:.1f} s and other processes {out.cpu.others:.1f} s; the "
            f"ceiling's pass: receivers {out.ceiling_cpu.receivers:.1f} s, sender "
            f"{out.ceiling_cpu.client:.1f} s, others {out.ceiling_cpu.others:.1f} s."
        ),
        "",
        _paragraph(WEBHOOKS_WHERE_THE_TIME_GOES),
        "",
    ]


if __name__ == "__main__":
    main()
