"""The last hour of turns, as the overview tells it: pure arithmetic over finished turns.

**The hour** is the current minute and the 59 whole minutes before it (`hour_since`): minutes
start on the minute (UTC), so the chart's labels are round, and the current minute is the only
partial one. A turn belongs to the minute it **finished** in (a turn is stored when it ends).

- `turns`, `failed`: the turns that finished in the hour, and those of them that ended `failed`
  (every attempt failed); per minute, the same two counts (`minutes`, oldest first, always 60).
- `per_minute`: `turns` over the 60 minutes of the hour.
- `latency`: p50 and p95 of the turns' durations (`finished_at - started_at`: the work of the
  turn, its queue wait left out), by the nearest-rank rule — the smallest duration that at least
  that share of the hour's turns took no longer than. None when no turn finished in the hour.
- `failures`: per role, the failed turns and how many distinct runs they were in.

The store does not hand every turn over: it counts the minutes, reads the two durations at
their nearest ranks (`rank_index`) and counts the failures per role, and `assemble` makes the hour
of those. `hour_of` makes it from the turns themselves: the rule the store's counts must agree
with (tests/contract/test_overview_reads.py checks that they do).

Times are integer microseconds since the epoch, passed in: nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MINUTE = 60_000_000
"""A minute, in microseconds."""
MINUTES = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishedTurn:
    """What the overview reads of a stored turn."""

    run_id: str
    role: str
    started_at: int
    finished_at: int
    failed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Minute:
    start: int
    turns: int
    failed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleFailures:
    role: str
    turns: int
    runs: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Latency:
    p50: int
    p95: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Hour:
    since: int
    turns: int
    failed: int
    latency: Latency | None
    minutes: tuple[Minute, ...]
    failures: tuple[RoleFailures, ...]
    """Roles with a failed turn in the hour, in name order."""

    @property
    def per_minute(self) -> float:
        return self.turns / MINUTES


def duration(started_at: int, finished_at: int) -> int:
    """A turn's duration: never below zero (replicas' clocks may differ a little)."""
    return max(finished_at - started_at, 0)


def hour_since(now: int) -> int:
    """The start of the hour that ends with the minute `now` is in."""
    return now - now % MINUTE - (MINUTES - 1) * MINUTE


def rank_index(count: int, share: float) -> int:
    """Where, in `count` (> 0) values in ascending order, the nearest rank of `share` (0 < share
    <= 1) is: the index of the smallest value that at least that share of them are no greater
    than. The store reads that one value (an offset into the hour's sorted durations) instead of
    every duration."""
    return max(math.ceil(share * count), 1) - 1


def nearest_rank(ordered: Sequence[int], share: float) -> int:
    """The smallest value of `ordered` (ascending, not empty) that at least `share` (0 < share
    <= 1) of the values are no greater than."""
    return ordered[rank_index(len(ordered), share)]


def slot_of(finished_at: int, since: int) -> int:
    """The minute of the hour from `since` that a turn finished at `finished_at` counts in (0
    for the oldest; outside 0..59, not in the hour)."""
    return (finished_at - since) // MINUTE


def hour_until(since: int) -> int:
    """Where the hour from `since` ends (excluded): the end of its current minute."""
    return since + MINUTES * MINUTE


def assemble(
    since: int,
    counts: Iterable[tuple[int, int, int]],
    latency: Latency | None,
    failures: Iterable[RoleFailures],
) -> Hour:
    """The hour from `since` out of what the store counted: (slot, turns, failed) for each minute
    that had a turn (`slot_of`), the latency read at the nearest ranks, and the failures per
    role. `hour_of` is the same hour, counted from the turns themselves."""
    minutes = [[0, 0] for _ in range(MINUTES)]
    for slot, turns, failed in counts:
        if 0 <= slot < MINUTES:
            minutes[slot] = [turns, failed]
    return Hour(
        since=since,
        turns=sum(n for n, _ in minutes),
        failed=sum(f for _, f in minutes),
        latency=latency,
        minutes=tuple(
            Minute(start=since + i * MINUTE, turns=n, failed=f) for i, (n, f) in enumerate(minutes)
        ),
        failures=tuple(sorted(failures, key=lambda f: f.role)),
    )


def hour_of(turns: Iterable[FinishedTurn], since: int) -> Hour:
    """The hour from `since` (`hour_since`) of the turns that finished at or after it; a turn
    that finished before `since` is left out. The rule the store's counts must agree with."""
    counts: dict[int, list[int]] = {}
    durations: list[int] = []
    failed_turns: dict[str, int] = {}
    failed_runs: dict[str, set[str]] = {}
    for turn in turns:
        slot = slot_of(turn.finished_at, since)
        if not 0 <= slot < MINUTES:
            continue
        minute = counts.setdefault(slot, [0, 0])
        minute[0] += 1
        durations.append(duration(turn.started_at, turn.finished_at))
        if turn.failed:
            minute[1] += 1
            failed_turns[turn.role] = failed_turns.get(turn.role, 0) + 1
            failed_runs.setdefault(turn.role, set()).add(turn.run_id)
    durations.sort()
    latency = (
        Latency(p50=nearest_rank(durations, 0.5), p95=nearest_rank(durations, 0.95))
        if durations
        else None
    )
    return assemble(
        since,
        ((slot, n, f) for slot, (n, f) in counts.items()),
        latency,
        (RoleFailures(role=r, turns=n, runs=len(failed_runs[r])) for r, n in failed_turns.items()),
    )
