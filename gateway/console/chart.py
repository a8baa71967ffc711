"""The overview's chart of the last hour: turns and failed turns per minute, as the geometry of
an inline SVG the template draws (no script, no library).

Each of the 60 minutes of `GET /api/v1/overview`'s `last_hour.minutes` is a bar as tall as its
turns, its failed turns the bar's lower part in the alert colour. The scale runs from 0 to the
busiest minute's turns (1 at least). Colours come from the stylesheet's classes, so the chart
follows dark mode. What a screen reader gets instead of the drawing: the chart's `summary` (its
`<title>`) and the table of the minutes that had turns (`busy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

WIDTH, HEIGHT = 600, 170
LEFT, RIGHT, TOP, BOTTOM = 40, 8, 12, 26
SLOT = (WIDTH - LEFT - RIGHT) / 60
BAR = SLOT - 2
PLOT = HEIGHT - TOP - BOTTOM


@dataclass(frozen=True, slots=True, kw_only=True)
class Bar:
    x: float
    width: float
    label: str
    """The minute and its counts, in words (the bar's tooltip)."""
    turns_y: float
    turns_height: float
    failed_y: float
    failed_height: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick:
    x: float
    label: str
    anchor: str
    """Where the label hangs from `x`: the first and last stay inside the frame."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top_y: int = TOP
    base_y: int = TOP + PLOT
    """The frame: the viewBox, and where the plot's edges and its 0 and top lines are."""
    bars: tuple[Bar, ...]
    """Only the minutes with turns."""
    ticks: tuple[Tick, ...]
    top: int
    """The scale's top: the busiest minute's turns (1 at least)."""
    summary: str
    busy: tuple[dict[str, Any], ...]
    """The minutes with turns, oldest first: `{"at", "clock", "turns", "failed"}`."""


def clock(at: str) -> str:
    """`2026-12-06T20:14:00Z` as `20:14`."""
    return at.partition("T")[2][:5]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _summary(minutes: Sequence[dict[str, Any]], turns: int, failed: int) -> str:
    span = f"from {clock(minutes[0]['at'])} to {clock(minutes[-1]['at'])} UTC"
    if not turns:
        return f"Turns per minute over the last hour, {span}: no turn finished."
    busiest = max(minutes, key=lambda m: m["turns"])
    return (
        f"Turns per minute over the last hour, {span}: {_plural(turns, 'turn')}, "
        f"{failed} failed; the busiest minute, {clock(busiest['at'])}, had "
        f"{_plural(busiest['turns'], 'turn')}."
    )


def chart(minutes: Sequence[dict[str, Any]]) -> Chart:
    """The chart of `last_hour.minutes` (60 of them, oldest first)."""
    top = max([1, *(m["turns"] for m in minutes)])
    bars = []
    for i, minute in enumerate(minutes):
        turns, failed = minute["turns"], minute["failed"]
        if not turns:
            continue
        height, failed_height = PLOT * turns / top, PLOT * failed / top
        bars.append(
            Bar(
                x=round(LEFT + i * SLOT + 1, 2),
                width=round(BAR, 2),
                label=f"{clock(minute['at'])}: {_plural(turns, 'turn')}, {failed} failed",
                turns_y=round(TOP + PLOT - height, 2),
                turns_height=round(height, 2),
                failed_y=round(TOP + PLOT - failed_height, 2),
                failed_height=round(failed_height, 2),
            )
        )
    last = len(minutes) - 1
    ticks = tuple(
        Tick(
            x=round(LEFT + i * SLOT + (0 if i == 0 else SLOT if i == last else SLOT / 2), 2),
            label=clock(minutes[i]["at"]),
            anchor="start" if i == 0 else "end" if i == last else "middle",
        )
        for i in sorted({0, 15, 30, 45, last})
        if 0 <= i <= last
    )
    busy = tuple(
        {"at": m["at"], "clock": clock(m["at"]), "turns": m["turns"], "failed": m["failed"]}
        for m in minutes
        if m["turns"]
    )
    turns = sum(m["turns"] for m in minutes)
    failed = sum(m["failed"] for m in minutes)
    summary = _summary(minutes, turns, failed) if minutes else "No figures for the last hour."
    return Chart(bars=tuple(bars), ticks=ticks, top=top, summary=summary, busy=busy)
