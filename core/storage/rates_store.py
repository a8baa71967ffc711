"""Token buckets in the database (`rate_buckets`), shared by every replica (PostgreSQL): how fast
one key (an identity posting from the widget, say) may act, whichever replica it reaches.

A bucket holds up to `burst` tokens and fills at `per_second`; one action takes one token, and
an action that finds less than one is refused with the seconds until there is one (nothing is
taken). A key never seen has a full bucket. The rule is `take`, pure, over a `Bucket` and the
time; the in-process limiter (`channels.web.limits`) uses it too.

`Take` is one writer command per action: its check reads the key's row `FOR UPDATE`, so takes
from several replicas are applied one after another; its write stores the new level. Two
replicas taking from a key never seen may both find no row: the second insert finds the
first's, and its write reads that row (locked) and takes from it instead.

Times are microseconds of the wall clock (replicas share it; a bucket whose time is ahead of a
replica's clock just does not fill until that time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import select, update

from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.engine import dialect_of
from core.storage.writer import Writer

_r = schema.rate_buckets
_MICROS = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Rate:
    per_second: float
    burst: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Bucket:
    level: float
    """Tokens left as of `at`."""
    at: int
    """When `level` was last worked out (microseconds)."""


def take(bucket: Bucket | None, rate: Rate, now: int) -> tuple[Bucket, float]:
    """One action at `now`: the bucket after it, and 0 when it may go, else the seconds until
    it may."""
    if bucket is None:
        bucket = Bucket(level=rate.burst, at=now)
    elapsed = max(0, now - bucket.at) / _MICROS
    level = min(rate.burst, bucket.level + elapsed * rate.per_second)
    at = max(now, bucket.at)
    if level >= 1:
        return Bucket(level=level - 1, at=at), 0.0
    return Bucket(level=level, at=at), (1 - level) / rate.per_second


def _read(connection: Reads, key: str) -> Bucket | None:
    row = connection.execute(
        select(_r.c.level, _r.c.at).where(_r.c.key == key).with_for_update()
    ).first()
    return Bucket(level=row[0], at=row[1]) if row is not None else None


@dataclass(frozen=True, slots=True)
class Take(NoRuns):
    """One action of `key` at `now` (microseconds; None: the batch's time): 0 when it may go,
    else the seconds to wait."""

    key: str
    rate: Rate
    now: int | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> Bucket | None:
        return _read(batch.connection, self.key)

    def write(self, batch: Batch, plan: Bucket | None) -> Callable[[], float]:
        connection = batch.connection
        now = batch.now if self.now is None else self.now
        after, wait = take(plan, self.rate, now)
        if plan is None:
            inserted = connection.execute(
                dialect_of(connection)
                .insert(_r)
                .values(key=self.key, level=after.level, at=after.at)
                .on_conflict_do_nothing()
            ).rowcount
            if inserted:
                return lambda: wait
            # another replica's first take came first: take from its bucket
            after, wait = take(_read(connection, self.key), self.rate, now)
        connection.execute(
            update(_r).where(_r.c.key == self.key).values(level=after.level, at=after.at)
        )
        return lambda: wait


class SqlRateBuckets:
    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    async def take(self, key: str, rate: Rate, *, now: int | None = None) -> float:
        return await self._writer.run(Take(key, rate, now))
