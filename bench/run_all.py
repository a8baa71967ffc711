"""Run every benchmark and write the results to docs/benchmarks.md.

    python -m bench.run_all            (or: make bench)

Each benchmark measures its ceiling in the same run, on the same machine, so the ratios mean
something even when the absolute numbers move with the machine's load.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench import ingest, timeline
from bench.harness import ROOT, Latency, machine, today

REPORT = ROOT / "docs" / "benchmarks.md"

INGEST_TARGET = "at least 4,000 messages/s with p99 under 15 ms"
TIMELINE_TARGET = "p99 under 5 ms"

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


def _row(name: str, result: Latency) -> str:
    return f"| {name} | {result.p50_ms:.2f} | {result.p99_ms:.2f} |"


def _ingest_row(name: str, result: ingest.Ingest) -> str:
    latency = result.latency
    return (
        f"| {name} | {latency.rate:,.0f} | {latency.p50_ms:.2f} | {latency.p99_ms:.2f} "
        f"| {result.cpu_us_per_message:,.0f} |"
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        workdir = Path(tmp)
        runs = ingest.measure_all(workdir, 20_000, 1_000, 32)
    reads = timeline.measure(100_000, 1_000)
    bare, ceiling, gateway = (runs[k].latency for k in ("aiohttp", "commit", "gateway"))
    verdict_ingest = "met" if gateway.rate >= 4_000 and gateway.p99_ms < 15 else "**not met**"
    verdict_read = "met" if reads["repository"].p99_ms < 5 else "**not met**"
    verdict_http = "met" if reads["http"].p99_ms < 5 else "**not met**"
    lines = [
        "# Benchmarks",
        "",
        f"Measured {today()} on {machine()} by `python -m bench.run_all` (`make bench`).",
        "Every number below comes from that one run; each benchmark measures its own ceiling in",
        "the same run, so compare the ratios rather than absolute numbers across machines.",
        "",
        "## Message ingest over HTTP",
        "",
        "`python -m bench.ingest`: 32 concurrent keep-alive clients post 20,000 messages across",
        "1,000 threads (person:pN with role:concierge) to a fresh SQLite database. The load comes",
        "from `bench/loadgen.py` in its own process. The ceiling is `bench/ceiling_server.py`: a",
        "bare aiohttp handler that INSERTs one row with stdlib sqlite3 and commits per request,",
        "on the gateway's durability settings (WAL, synchronous=FULL); it validates nothing.",
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
        "sequential reads asks for the newest 50 events alice may see.",
        "",
        "| read | p50 ms | p99 ms |",
        "| --- | ---: | ---: |",
        _row("ceiling: newest 50 rows, stdlib sqlite3, unfiltered", reads["ceiling"]),
        _row("ThreadRepository.latest (in process)", reads["repository"]),
        _row("GET …/timeline?as=person:alice&latest=true&limit=50", reads["http"]),
        "",
        f"Target ({TIMELINE_TARGET}): repository {verdict_read}; over HTTP {verdict_http}.",
        "",
    ]
    REPORT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
