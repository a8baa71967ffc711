"""The approvals benchmark still runs end to end, tiny, and still fails when exactly-once does.

Nothing here is timed or compared: 20 conversations on SQLite ask, are answered (5 of them twice
at once), resume and reply; `approvals_only` raises `approvals.Failed` if any count is wrong.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bench import approvals, approvals_report, run_all


def test_approvals_benchmark_resolves_every_approval_once_and_writes_its_section(
    tmp_path: Path,
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Timeline read\n\nnumbers\n")
    section = run_all.approvals_only(report, conversations=20, setups=(approvals.SQLITE,))
    assert section[0] == approvals_report.HEADING
    text = " ".join(" ".join(section).split())
    assert "**Exactly once: met** in every setup." in text
    assert "| approvals resolved exactly once | 20 of 20 |" in text
    assert "| double clicks: one 200 and one 409 `approval_closed` | 5 of 5 |" in text
    assert "| second answers: 409 `approval_closed` | 20 of 20 |" in text
    assert report.read_text().startswith(
        "# Benchmarks\n\n## Timeline read\n\nnumbers\n\n## Approvals"
    )


def test_a_second_resolution_or_answer_fails_the_checks() -> None:
    """The checks themselves, on counts made up here: exactly once passes, anything else not."""
    right = approvals.Checks(
        approvals=4,
        resolved_once=4,
        resolved_twice=0,
        not_resolved=0,
        not_answered_yes=0,
        asked_twice=0,
        replied_once=4,
        replied_twice=0,
        replies_wrong=0,
        double_clicks=1,
        double_clicks_once=1,
        second_answers=4,
        second_answers_closed=4,
        events_after_second=0,
    )
    assert approvals.wrong_counts(right) == []
    doubled = dataclasses.replace(right, resolved_once=3, resolved_twice=1)
    assert approvals.wrong_counts(doubled) == [
        "approvals resolved exactly once: 3, expected 4",
        "approvals resolved more than once: 1, expected 0",
    ]
    reopened = dataclasses.replace(right, second_answers_closed=3, events_after_second=1)
    assert approvals.wrong_counts(reopened) == [
        "second answers refused as closed: 3, expected 4",
        "events added by the second answers: 1, expected 0",
    ]
