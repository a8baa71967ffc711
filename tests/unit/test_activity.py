"""The last hour of turns (`core.model.activity`): the hour is the current minute and the 59
before it; a turn counts in the minute it finished; p50/p95 are nearest-rank over durations;
failures are counted per role, turns and distinct runs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.model.activity import (
    MINUTE,
    FinishedTurn,
    RoleFailures,
    hour_of,
    hour_since,
    nearest_rank,
)

NOW = 29_416_666 * MINUTE + 42 * 1_000_000 + 7  # 42 s and 7 µs into a minute (2025-12-06)
SINCE = hour_since(NOW)


def _turn(
    finished: int, took: int, *, role: str = "echo", run: str = "r1", failed: bool = False
) -> FinishedTurn:
    return FinishedTurn(
        run_id=run, role=role, started_at=finished - took, finished_at=finished, failed=failed
    )


def test_the_hour_starts_59_whole_minutes_before_the_current_one() -> None:
    assert SINCE % MINUTE == 0
    assert NOW - SINCE == 59 * MINUTE + 42 * 1_000_000 + 7
    assert hour_since(SINCE) == SINCE - 59 * MINUTE  # on the minute: that minute is the last


def test_nearest_rank() -> None:
    assert nearest_rank([5], 0.5) == 5 and nearest_rank([5], 0.95) == 5
    values = list(range(1, 21))  # 1..20
    assert nearest_rank(values, 0.5) == 10
    assert nearest_rank(values, 0.95) == 19
    assert nearest_rank([1, 2, 3, 4], 0.5) == 2


def test_turns_count_in_the_minute_they_finished_and_older_ones_are_left_out() -> None:
    turns = [
        _turn(SINCE - 1, 10),  # before the hour
        _turn(SINCE, 1_000),  # its first instant
        _turn(SINCE + MINUTE - 1, 3_000, failed=True, role="broken", run="b1"),
        _turn(NOW, 2_000, failed=True, role="broken", run="b1"),
        _turn(NOW, 4_000, failed=True, role="broken", run="b2"),
        _turn(NOW, 5_000, failed=True, role="atlas", run="a1"),
    ]
    hour = hour_of(turns, SINCE)

    assert (hour.turns, hour.failed) == (5, 4)
    assert len(hour.minutes) == 60 and hour.minutes[0].start == SINCE
    assert [(m.turns, m.failed) for m in hour.minutes if m.turns] == [(2, 1), (3, 3)]
    assert hour.minutes[-1].turns == 3
    assert hour.per_minute == 5 / 60
    assert hour.latency is not None
    assert (hour.latency.p50, hour.latency.p95) == (3_000, 5_000)  # of 1, 2, 3, 4, 5 ms
    assert hour.failures == (
        RoleFailures(role="atlas", turns=1, runs=1),
        RoleFailures(role="broken", turns=3, runs=2),
    )


def test_an_hour_without_turns_has_no_latency() -> None:
    hour = hour_of([], SINCE)
    assert (hour.turns, hour.failed, hour.latency, hour.failures) == (0, 0, None, ())
    assert sum(m.turns for m in hour.minutes) == 0


@given(st.lists(st.tuples(st.integers(0, 60 * MINUTE - 1), st.integers(0, 10**7), st.booleans())))
def test_the_minutes_add_up_to_the_hour(drawn: list[tuple[int, int, bool]]) -> None:
    hour = hour_of([_turn(SINCE + at, took, failed=f) for at, took, f in drawn], SINCE)
    assert sum(m.turns for m in hour.minutes) == hour.turns == len(drawn)
    assert sum(m.failed for m in hour.minutes) == hour.failed == sum(f for *_, f in drawn)
    if hour.latency is not None:
        durations = sorted(took for _, took, _ in drawn)
        assert durations[0] <= hour.latency.p50 <= hour.latency.p95 <= durations[-1]
