"""How fast one identity may post: a token bucket per identity, in this process."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

BURST = 10
"""Messages an identity may send at once before the rate applies."""
TRACKED = 100_000
"""Identities remembered; the least recently seen are forgotten first (with a full bucket)."""


class PostingRate:
    def __init__(
        self, per_minute: float, *, burst: int = BURST, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, who: str) -> float:
        """Take one message from `who`'s bucket: 0 when allowed, else the seconds to wait."""
        now = self._clock()
        level, then = self._buckets.pop(who, (self._burst, now))
        level = min(self._burst, level + (now - then) * self._rate)
        if level >= 1:
            self._buckets[who] = (level - 1, now)
            wait = 0.0
        else:
            self._buckets[who] = (level, now)
            wait = (1 - level) / self._rate
        while len(self._buckets) > TRACKED:
            self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> int:
        return max(1, math.ceil(wait))
