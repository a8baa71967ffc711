"""How fast one identity may post: a token bucket per identity (`core.storage.rates_store.take`:
`burst` at once, then `per_minute`), where every process serving the widget sees it.

- In this process (SQLite: one process serves every request): the buckets are in memory, the
  least recently seen forgotten first past `TRACKED` (they come back full). Nothing is written.
- In the database (`PostingRate.shared`; PostgreSQL: replicas behind a load balancer with no
  affinity, so one identity's posts reach any of them): the bucket is the row
  `widget-post:<who>` of `rate_buckets`, one writer command per post, timed by the wall clock.

Either way the answer is the same: 0 when the post may go, else the seconds to wait (the
route's 429 and its `Retry-After`).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from core.storage.database import Database
from core.storage.rates_store import Bucket, Rate, SqlRateBuckets, take

BURST = 10
"""Messages an identity may send at once before the rate applies."""
TRACKED = 100_000
"""Identities remembered; the least recently seen are forgotten first (with a full bucket)."""
KEY = "widget-post:"
"""What the keys of the widget's buckets in the database begin with."""


class PostingRate:
    def __init__(
        self,
        per_minute: float,
        *,
        burst: int = BURST,
        clock: Callable[[], float] = time.monotonic,
        shared: SqlRateBuckets | None = None,
    ) -> None:
        """`clock`: seconds (the wall clock's when `shared`, which every replica reads)."""
        self._rate = Rate(per_second=per_minute / 60.0, burst=float(burst))
        self._clock = clock
        self._shared = shared
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    @classmethod
    def shared(
        cls,
        database: Database,
        per_minute: float,
        *,
        burst: int = BURST,
        clock: Callable[[], float] = time.time,
    ) -> PostingRate:
        """The rate with its buckets in `database`, shared by every replica serving it."""
        return cls(per_minute, burst=burst, clock=clock, shared=database.rates)

    async def take(self, who: str) -> float:
        """Take one message from `who`'s bucket: 0 when allowed, else the seconds to wait."""
        now = round(self._clock() * 1_000_000)
        if self._shared is not None:
            return await self._shared.take(KEY + who, self._rate, now=now)
        bucket, wait = take(self._buckets.pop(who, None), self._rate, now)
        self._buckets[who] = bucket
        while len(self._buckets) > TRACKED:
            self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> int:
        return max(1, math.ceil(wait))
