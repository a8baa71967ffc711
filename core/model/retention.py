"""How long what people said is kept: retention (pure).

Four kinds of record have a retention, each a duration or "forever" (the default, as before):

- `messages`: the messages of conversations (and the retractions that name them), by when they
  were said;
- `memory`: a role's memory entries, by when they were stored;
- `transcripts`: the record of a run's turns, by when the turn finished;
- `deliveries`: the gateway's records of where it delivered what (the Slack post of each event),
  by when the event was said.

The gateway's settings give a default for each kind; a role's manifest may set its own
(`retention: {messages: 365d, transcripts: 30d}`), which applies to what is the role's: its memory,
its runs' transcripts, its Slack posts, and the messages of every conversation it is in. A
conversation with several roles keeps its messages for the shortest of their retentions — a
retention is a promise to delete — and one with no role at all for the default.

What expires is removed, never rewritten: the timeline keeps every other event where it was,
with its `seq` and `position`, so a cursor into removed history simply reads on from the next
event. Membership changes, approvals and the conversations themselves are kept.

Durations are written as a number and a unit: `90s`, `30m`, `12h`, `365d`, `8w`; or `forever`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from datetime import timedelta
from enum import StrEnum

from core.model.errors import InvalidInput

_DURATION = re.compile(r"\s*(\d{1,7})\s*([smhdw])\s*")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 7 * 86_400}
FOREVER = "forever"
KEPT_FOREVER = timedelta.max
"""A retention written `forever` (set, unlike one not written at all, which takes the default)."""
MIN_RETENTION = timedelta(seconds=1)
MAX_RETENTION = timedelta(days=100 * 365)


class Kept(StrEnum):
    MESSAGES = "messages"
    MEMORY = "memory"
    TRANSCRIPTS = "transcripts"
    DELIVERIES = "deliveries"


def parse_duration(raw: object) -> timedelta:
    """A retention as written (`365d`, `12h`, a number of seconds, or `forever`:
    `KEPT_FOREVER`). `InvalidInput` says what is wrong."""
    if isinstance(raw, str) and raw.strip().lower() == FOREVER:
        return KEPT_FOREVER
    if isinstance(raw, bool):
        raise InvalidInput("a retention is a duration like 365d, not true or false")
    if isinstance(raw, int | float):
        kept = timedelta(seconds=raw)
    elif isinstance(raw, str) and (found := _DURATION.fullmatch(raw.lower())):
        kept = timedelta(seconds=int(found.group(1)) * _UNITS[found.group(2)])
    elif isinstance(raw, timedelta):
        kept = raw
    else:
        raise InvalidInput(
            f"{raw!r} is not a retention: write a number and a unit (90s, 30m, 12h, 365d, 8w) "
            "or forever",
            code="invalid_retention",
        )
    if not MIN_RETENTION <= kept <= MAX_RETENTION:
        raise InvalidInput(
            f"a retention must be between 1 second and 100 years, not {raw!r}",
            code="invalid_retention",
        )
    return kept


def written(kept: timedelta | None) -> str:
    """A retention as it is written back: `forever`, or the largest whole unit (`30d`)."""
    if kept is None or kept >= KEPT_FOREVER:
        return FOREVER
    seconds = int(kept.total_seconds())
    for unit in ("w", "d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


@dataclass(frozen=True, slots=True, kw_only=True)
class Retention:
    """How long each kind of record is kept: a duration, `KEPT_FOREVER`, or None (not said
    here: the default's, which is forever when it says nothing either)."""

    messages: timedelta | None = None
    memory: timedelta | None = None
    transcripts: timedelta | None = None
    deliveries: timedelta | None = None

    def of(self, kept: Kept) -> timedelta | None:
        """How long records of `kept` are kept; None: forever."""
        found: timedelta | None = getattr(self, kept.value)
        return None if found is None or found >= KEPT_FOREVER else found

    def over(self, default: Retention) -> Retention:
        """This retention, with `default`'s where this one says nothing."""
        return Retention(
            **{
                f.name: getattr(self, f.name)
                if getattr(self, f.name) is not None
                else getattr(default, f.name)
                for f in fields(self)
            }
        )

    @property
    def keeps_everything(self) -> bool:
        return all(self.of(kept) is None for kept in Kept)


def shortest(*retentions: timedelta | None) -> timedelta | None:
    """The shortest of several retentions of one record (None, forever, only if all are)."""
    given = [r for r in retentions if r is not None]
    return min(given) if given else None
