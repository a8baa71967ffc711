"""Who sees what on a timeline: a read-time filter, never a copy.

Participant P sees event E iff
  - E is P's own state change, or
  - P was active at E: P's state is taken from P's latest state change strictly before E in
    timeline order `(at, seq)`, and is `active` when there is none.
Non-members see nothing.

Consequences, each tested: a message ordered before a removal (even at the same instant) is seen;
everything after the removal up to the re-add is never seen — the blackout window, which stays
dark after the re-add; others' state changes inside a blackout are hidden; the re-add itself, like
the removal, is P's own and seen.

`blackouts` turns P's own state changes into open windows `(removal, re-add)` so that storage can
filter with a handful of range conditions instead of replaying the timeline.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.timeline import Event, StateChange, TimelineKey


@dataclass(frozen=True, slots=True)
class Blackout:
    """Events strictly after `start` and strictly before `end` (None: open-ended) are hidden."""

    start: TimelineKey
    end: TimelineKey | None

    def hides(self, key: TimelineKey) -> bool:
        return self.start < key and (self.end is None or key < self.end)


def own_changes(viewer: Address, events: Iterable[Event]) -> list[StateChange]:
    """The viewer's own state changes, in timeline order."""
    mine = [e for e in events if isinstance(e, StateChange) and e.participant == viewer]
    return sorted(mine, key=lambda e: e.key)


def blackouts(changes: Sequence[StateChange]) -> list[Blackout]:
    """The blackout windows made by one participant's state changes (in timeline order)."""
    windows: list[Blackout] = []
    start: TimelineKey | None = None
    for change in changes:
        if change.to_state is ParticipantState.REMOVED and start is None:
            start = change.key
        elif change.to_state is ParticipantState.ACTIVE and start is not None:
            windows.append(Blackout(start, change.key))
            start = None
    if start is not None:
        windows.append(Blackout(start, None))
    return windows


def state_at(changes: Sequence[StateChange], key: TimelineKey) -> ParticipantState:
    """The state from the latest of `changes` strictly before `key`; `active` when none."""
    index = bisect_left([c.key for c in changes], key)
    return changes[index - 1].to_state if index else ParticipantState.ACTIVE


def is_visible(viewer: Address, event: Event, windows: Sequence[Blackout]) -> bool:
    if isinstance(event, StateChange) and event.participant == viewer:
        return True
    return not any(window.hides(event.key) for window in windows)


def visible_to(viewer: Address, events: Sequence[Event], members: Iterable[Address]) -> list[Event]:
    """The events of one thread that `viewer` may see, in the order given."""
    if viewer not in set(members):
        return []
    windows = blackouts(own_changes(viewer, events))
    return [e for e in events if is_visible(viewer, e, windows)]
