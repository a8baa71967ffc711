"""How often one client address may try to sign in to the console: a token bucket per address
(`BURST` tries at once, then `PER_MINUTE`), the rule of `core.storage.rates_store.take` that the
widget's posting rate uses too.

On SQLite (one process) the buckets are in memory, the least recently seen forgotten first past
`TRACKED`. On PostgreSQL they are rows of `rate_buckets` (`console-login:<address>`), so an
address gets the same allowance whichever replica it reaches; housekeeping deletes idle ones.
Every try counts, good or bad: a browser signs in once in twelve hours.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from core.storage.rates_store import Bucket, Rate, SqlRateBuckets, take

BURST = 5
PER_MINUTE = 5.0
TRACKED = 10_000
KEY = "console-login:"


class LoginRate:
    def __init__(
        self,
        *,
        shared: SqlRateBuckets | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._rate = Rate(per_second=PER_MINUTE / 60.0, burst=float(BURST))
        self._shared = shared
        self._clock = clock
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    async def take(self, address: str) -> float:
        """One try from `address`: 0 when it may go, else the seconds to wait."""
        now = round(self._clock() * 1_000_000)
        if self._shared is not None:
            return await self._shared.take(KEY + address, self._rate, now=now)
        bucket, wait = take(self._buckets.pop(address, None), self._rate, now)
        self._buckets[address] = bucket
        while len(self._buckets) > TRACKED:
            self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> int:
        return max(1, math.ceil(wait))
