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


def hour_since(now: int) -> int:
    """The start of the hour that ends with the minute `now` is in."""
    return now - now % MINUTE - (MINUTES - 1) * MINUTE


def nearest_rank(ordered: Sequence[int], share: float) -> int:
    """The smallest value of `ordered` (ascending, not empty) that at least `share` (0 < share
    <= 1) of the values are no greater than."""
    return ordered[max(math.ceil(share * len(ordered)), 1) - 1]


def hour_of(turns: Iterable[FinishedTurn], since: int) -> Hour:
    """The hour from `since` (`hour_since`) of the turns that finished at or after it; a turn
    that finished before `since` is left out."""
    counts = [[0, 0] for _ in range(MINUTES)]
    durations: list[int] = []
    failed_turns: dict[str, int] = {}
    failed_runs: dict[str, set[str]] = {}
    for turn in turns:
        slot = (turn.finished_at - since) // MINUTE
        if not 0 <= slot < MINUTES:
            continue
        counts[slot][0] += 1
        durations.append(max(turn.finished_at - turn.started_at, 0))
        if turn.failed:
            counts[slot][1] += 1
            failed_turns[turn.role] = failed_turns.get(turn.role, 0) + 1
            failed_runs.setdefault(turn.role, set()).add(turn.run_id)
    durations.sort()
    latency = (
        Latency(p50=nearest_rank(durations, 0.5), p95=nearest_rank(durations, 0.95))
        if durations
        else None
    )
    return Hour(
        since=since,
        turns=len(durations),
        failed=sum(failed for _, failed in counts),
        latency=latency,
        minutes=tuple(
            Minute(start=since + i * MINUTE, turns=n, failed=f) for i, (n, f) in enumerate(counts)
        ),
        failures=tuple(
            RoleFailures(role=role, turns=failed_turns[role], runs=len(failed_runs[role]))
            for role in sorted(failed_turns)
        ),
    )
