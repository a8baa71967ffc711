"""The console's pages benchmark still runs end to end (tiny sizes; nothing here is timed or
compared): it builds its people, conversations and big timeline, signs in, reads every page it
lists with a 200 (a page that answers anything else stops it), and writes its section."""

from __future__ import annotations

from pathlib import Path

from bench import console, run_all


def test_console_benchmark_reads_every_page_and_writes_its_section(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Round trips\n\nnumbers\n")
    section = run_all.console_only(report, conversations=40, events=400, reads=2)
    assert section[0] == console.HEADING
    rows = [line for line in section if line.startswith("| ") and "`/console" in line]
    assert len(rows) == len(console.pages("t", "r", 40, 400))
    assert report.read_text().count(console.HEADING) == 1
