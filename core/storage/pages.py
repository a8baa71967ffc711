"""Pages: what a cursor-based read returns — the items, and the cursor to read on from.

Reads are "after X, up to a limit"; a page carries the next cursor, so a reader resumes from a
position and never from "did I get it". Positions are only handed out once everything before
them is committed, so a reader that resumes from one never misses an event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.model.threads import Thread
from core.model.timeline import AnyEvent, ThreadId

DEFAULT_PAGE = 50
MAX_PAGE = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelinePage:
    """Events of one thread in `seq` order.

    Reading forward (`after`), `next` is the `after` for the following page — the `seq` of the
    last event returned, or `after` itself when none was — and `more` says whether any visible
    event lies beyond it. Reading backward (`before`), `next`
    is the `before` for the earlier page (the smallest `seq` returned), or None at the beginning.
    """

    events: Sequence[AnyEvent]
    next: int | None
    more: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadPage:
    """Threads in creation order; `next` is the `after` for the following page (None: no more)."""

    threads: Sequence[Thread]
    next: ThreadId | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EventPage:
    """Events of all threads in `position` order; `next` is the position to resume after."""

    events: Sequence[AnyEvent]
    next: int
