"""The benchmark scripts still run end to end (tiny sizes; nothing here is timed or compared)."""

from __future__ import annotations

from pathlib import Path

from bench import ingest, timeline


def test_ingest_benchmark_runs_against_all_three_servers(tmp_path: Path) -> None:
    results = ingest.measure_all(tmp_path, messages=120, threads=12, clients=4)
    assert set(results) == {"aiohttp", "commit", "gateway"}
    assert all(r.latency.count == 120 for r in results.values())


def test_timeline_benchmark_reads_past_the_blackouts() -> None:
    results = timeline.measure(events=1_500, reads=10)
    assert set(results) == {"ceiling", "repository", "http"}
    assert all(r.count == 10 for r in results.values())
