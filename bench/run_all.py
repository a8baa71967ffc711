"""Run every benchmark and write the results to docs/benchmarks.md.

    python -m bench.run_all            (or: make bench)
    python -m bench.run_all --only recall
    python -m bench.run_all --only fanout

Each benchmark measures its ceiling in the same run, on the same machine, so the ratios mean
something even when the absolute numbers move with the machine's load. `--only NAME` (recall or
fanout) runs that benchmark alone and writes its section over the one in the report (or after
the others), saying when and where it was measured, apart from the run at the top.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from bench import fanout, ingest, recall, roundtrip, sleep_memory, timeline
from bench.harness import ROOT, Latency, machine, today

REPORT = ROOT / "docs" / "benchmarks.md"

INGEST_TARGET = "at least 4,000 messages/s with p99 under 15 ms"
TIMELINE_TARGET = "p99 under 5 ms"
ROUNDTRIP_TARGET = "at least 1,500 round trips/s with p99 under 50 ms"
RECALL_TARGET = "p99 under 10 ms"

CONVERSATIONS = 1_000
ROUND_TRIPS = 10_000
POSTERS = 32
IDLE_CONVERSATIONS = 10_000
RECALL_ENTRIES = 100_000
RECALL_THREADS = 1_000
RECALL_READS = 1_000
FANOUT_CONVERSATIONS = 1_000
FANOUT_ROUNDS = 5

RECALL_HEADING = "## Agent memory recall"
FANOUT_HEADING = "## Task fan-out to subscribed conversations"

WHERE_THE_TIME_GOES = """\
Where the time goes. On two cores the load generator takes most of one; the server is one
Python process whose threads share one interpreter lock, so its throughput is its CPU time per
message. "aiohttp alone" is the floor any aiohttp handler pays per request on this machine. The
gateway adds, per message: the operator-token check, strict JSON validation, request id, metrics
and the access-log decision (roughly half as much again as aiohttp itself, measured with the
repository replaced by a stub), and its share of a group-commit batch — one transaction per
batch that loads the batch's threads and members, takes positions from the counter row, inserts
the events and advances each thread's `seq`, committed with an fsync (WAL, synchronous=FULL).
The batch runs in the writer's own thread on stdlib sqlite3 and competes with the event loop for
the interpreter lock. Batches hold about as many messages as there are clients waiting (about
16 of 32 here)."""


ROUNDTRIP_WHERE_THE_TIME_GOES = """\
Where the time goes. A round trip is far more work for the gateway than an ingested message:
the person message's HTTP request and its share of a write batch; the run host's routing (from
the writer's after-commit callback, no read); the run's read of its news (one statement in a
reader thread, in one hop with the other runs reading in the same loop iteration); the echo turn
itself (in process, next to nothing); the end of the turn, which commits the reply with the
run's cursor and the turn's record in the next write batch; and the listener's long-poll
requests that carry both events out as JSON. That is two commits, one run read and two event
reads per round trip, each a hop to a database thread, all sharing one interpreter lock. A
sampling profile (py-spy, 32 posters; not part of this run) found the lock held about half the
time by the event loop (HTTP, the long-poll's JSON, the host), and a quarter each by the writer
thread and the reader threads. Earlier versions of the host were slower (about 370 round
trips/s): they read each run's row on every turn, built statements per call, read every commit
back to route it, checked out a pooled connection per unit of work, and took one thread hop per
run's read."""

SLEEP_WHAT_STAYS = """\
What stays. Asleep, a conversation is rows in the database; the process still holds the run
host's cache of each thread's role members (one small entry per thread that has had a message,
up to 100,000), SQLite's page caches (the writer's connection and four readers', up to 2 MiB
each by default), and the memory Python's allocator keeps after objects are freed. Every echo
session here is tiny (its state is a few fields), so the awake/asleep difference is what holding
a session and its run costs the host, not what an agent with real context would cost."""


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
    parser.add_argument("--only", choices=["recall", "fanout"], help="run this benchmark alone")
    only = parser.parse_args().only
    if only is not None:
        print("\n".join(recall_only() if only == "recall" else fanout_only()))
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
        *_roundtrip_section(trips),
        *_sleep_section(idle),
        *_recall_section(memory),
        *_fanout_section(fan),
    ]
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))


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
    met_at = [t.posters for t in [warm, *result.sweep] if _meets(t)]
    elsewhere = (
        f"met at {', '.join(map(str, met_at))} posters"
        if met_at
        else "nor with any other number of posters measured"
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
            f"({ROUNDTRIP_TARGET}), warm with {warm.posters} posters: {verdict}; {elsewhere}."
        ),
        "",
        ROUNDTRIP_WHERE_THE_TIME_GOES,
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
                else " Reaching the target would take less than half the CPU per round trip: "
                "fewer hops to database threads per turn, or turns taken in batches."
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


def _with_section(text: str, heading: str, section: list[str]) -> str:
    """`text` with the section under `heading` replaced by `section`, or `section` at the end."""
    body = "\n".join(section)
    start = text.find(f"\n{heading}\n")
    if start < 0:
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + body
    after = text.find("\n## ", start + 1)
    if after < 0:
        return text[: start + 1] + body
    return text[: start + 1] + body + "\n" + text[after + 1 :]


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
            f"{task_rate:,.0f} runs a second: each turn is one read in a reader thread (the "
            "thread's news past the cursor, and the task news past the task cursor — a "
            "statement joining task events, subscriptions and tasks, each row decoded into the "
            "task and its event), the agent's call in the event loop, and the turn's end (the "
            "cursors and the turn's record with its prompt) committed by the writer in a batch "
            "with other turns' ends. Everything is in one process whose threads share one "
            f"interpreter lock: it used {cores:.1f} cores on average during the task rounds, "
            f"{task_cpu:,.0f} µs of CPU per prompt. A message turn does the same without the "
            f"task-news read, plus its share of the {count:,} messages' commits before it and "
            "its reply's commit after it. A sampling profile (py-spy, ten task "
            "rounds; not part of this run) found the lock held by the reader threads about "
            "half of the time it was held, by the event loop a third and by the writer a fifth; "
            "the task-news statement and decoding its rows were about a third of the readers' "
            "share."
        ),
        "",
    ]


if __name__ == "__main__":
    main()
