"""The benchmark scripts still run end to end (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import fanout, ingest, recall, roundtrip, run_all, sleep_memory, timeline


def test_ingest_benchmark_runs_against_all_three_servers(tmp_path: Path) -> None:
    results = ingest.measure_all(tmp_path, messages=120, threads=12, clients=4)
    assert set(results) == {"aiohttp", "commit", "gateway"}
    assert all(r.latency.count == 120 for r in results.values())


def test_timeline_benchmark_reads_past_the_blackouts() -> None:
    results = timeline.measure(events=1_500, reads=10)
    assert set(results) == {"ceiling", "repository", "http"}
    assert all(r.count == 10 for r in results.values())


def test_roundtrip_benchmark_sees_every_echo(tmp_path: Path) -> None:
    result = roundtrip.measure(tmp_path, 8, 40, 4, sweep=(1,), sweep_round_trips=10)
    assert (result.first.latency.count, result.warm.latency.count) == (8, 40)
    assert [t.latency.count for t in result.sweep] == [10]
    assert all(t.missing == 0 for t in [result.first, result.warm, *result.sweep])
    assert result.ceiling.latency.count == 40


def test_sleep_memory_benchmark_settles_awake_and_asleep(tmp_path: Path) -> None:
    runs = sleep_memory.measure(tmp_path, conversations=20)
    assert (runs["awake"].sessions_awake, runs["awake"].sessions_asleep) == (20, 0)
    assert (runs["asleep"].sessions_awake, runs["asleep"].sessions_asleep) == (0, 20)
    assert all(run.used.rss > 0 and run.missing == 0 for run in runs.values())


def test_recall_benchmark_finds_every_query_and_writes_its_section(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.recall_only(report, entries=600, threads=12, reads=20)
    assert section[0] == run_all.RECALL_HEADING
    words = " ".join("\n".join(section).split())  # the paragraph wraps where its numbers put it
    assert "Wrong answers: 0 (" in words
    written = report.read_text()
    assert written.startswith("# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## Agent memory")
    run_all.recall_only(report, entries=300, threads=6, reads=10)
    assert report.read_text().count(run_all.RECALL_HEADING) == 1


def test_recall_benchmark_checks_the_repository_against_its_sql() -> None:
    result = recall.measure(entries=600, threads=12, reads=20)
    assert set(result.passes) == {recall.CEILING, recall.FILTERED, recall.REPOSITORY}
    assert all(p.latency.count == 20 for p in result.passes.values())
    assert result.wrong == 0 and all(m >= 1 for m in result.matched)
    assert result.store_rate > 0 and result.database_bytes > 0


def test_fanout_benchmark_prompts_every_subscribed_run_once_and_writes_its_section(
    tmp_path: Path,
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.fanout_only(report, conversations=12, rounds=2)
    assert section[0] == run_all.FANOUT_HEADING
    assert "Every round prompted all 12 runs, none twice." in " ".join(" ".join(section).split())
    assert report.read_text().startswith("# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## Task")
    run_all.fanout_only(report, conversations=6, rounds=1)
    assert report.read_text().count(run_all.FANOUT_HEADING) == 1


def test_fanout_benchmark_times_both_paths() -> None:
    result = fanout.measure(conversations=10, rounds=2)
    assert [r.kind for r in result.rounds] == [fanout.TASK, fanout.MESSAGE] * 2
    assert all(r.delivered == 10 and r.twice == 0 for r in result.rounds)
    assert all(0 < r.first_seconds <= r.total_seconds <= r.settled_seconds for r in result.rounds)


def test_sse_benchmark_delivers_every_message_once_and_writes_its_section(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.sse_only(report, streams=20, messages=3, reconnect=5, missed=2)
    assert section[0] == run_all.SSE_HEADING
    assert "Every stream received every message exactly once, in seq order (20 streams by 7" in (
        " ".join(" ".join(section).split())
    )
    assert report.read_text().startswith("# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## Widget")


def test_slack_events_benchmark_answers_every_event_once_and_writes_its_section(
    tmp_path: Path,
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.slack_only(report, rate=20, seconds=1, people=5, pace=0)
    assert section[0] == run_all.SLACK_HEADING
    assert "Every event sent was committed once and answered once in Slack (25 events, 2 of" in (
        " ".join(" ".join(section).split())
    )
    assert report.read_text().startswith("# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## Slack")


def test_acp_sleep_benchmark_wakes_every_conversation_and_writes_its_section(
    tmp_path: Path,
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.acp_only(report, conversations=5, idle_sleep_after=1)
    assert section[0] == run_all.ACP_HEADING
    text = " ".join(" ".join(section).split())
    assert "Agent processes alive at peak: **5**" in text
    assert "after idle sleep: **0**" in text
    assert "Replies missing: 0; every turn replied." in text
    assert report.read_text().startswith("# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## ACP")


def test_webhooks_benchmark_processes_and_delivers_everything_once_and_writes_its_section(
    tmp_path: Path,
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.webhooks_only(
        report, rate=40, seconds=1, keys=8, events=30, endpoints=3, flap_seconds=0.3
    )
    assert section[0] == run_all.WEBHOOKS_HEADING
    text = " ".join(" ".join(section).split())
    assert "missing 0; **duplicates processed 0**" in text
    assert "No duplicates, nothing missing, nothing out of order, every signature valid." in text
    assert report.read_text().startswith(
        "# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## Webhooks"
    )


@pytest.mark.postgres
def test_replicas_benchmark_answers_every_message_once_and_says_its_targets(
    tmp_path: Path,
) -> None:
    import asyncpg

    from bench import replicas
    from tests.conftest import _missing

    try:
        with replicas.database():
            pass
    except (OSError, asyncpg.PostgresError) as exc:
        _missing(f"{type(exc).__name__}: {exc}")
    two = replicas.measure_pass(tmp_path / "two", 2, total=40, posters=4, conversations=8)
    assert (two.latency.count, two.unanswered, two.doubled) == (40, 0, 0)
    takeover = replicas.measure_takeover(tmp_path / "kill", 1, timeout=1)
    assert len(takeover) == 1 and takeover[0] > 0
    lines = replicas.section([two], takeover, command="python -m bench.replicas")
    assert lines[0] == replicas.HEADING
    assert any("no reply missing or doubled: met" in line for line in lines)
