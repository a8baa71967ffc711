"""The tracing benchmark still runs end to end (tiny sizes; nothing here is timed or compared):
with tracing off, or on with nothing exported, its gateway sends no span; on, it exports to the
in-process collector; its section is written."""

from __future__ import annotations

from pathlib import Path

from bench import run_all, traces


def test_traces_benchmark_exports_only_when_on_and_writes_its_section(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Round trips\n\nnumbers\n")
    section = run_all.traces_only(report, conversations=6, total=30, rounds=1, single=5)
    assert section[0] == traces.HEADING
    rows = [line for line in section if line.startswith("| 1 |")]
    spans = {row.split(" | ")[1]: int(row.split(" | ")[9].replace(",", "")) for row in rows}
    assert spans["off"] == spans["on, not exported"] == 0 and spans["on"] > 0
    missing = {row.split(" | ")[-1].rstrip(" |") for row in rows}
    assert missing == {"0"}
    assert report.read_text().count(traces.HEADING) == 1
