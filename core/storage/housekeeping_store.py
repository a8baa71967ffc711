"""Housekeeping: records kept only for a while are deleted once their time has passed.

- **Delivery receipts** — Slack's event ids (`slack_events`) and the delivery ids of webhook
  sources whose signature covers its time (`webhook_deliveries`; Standard Webhooks). They are
  what recognises a delivery made again (a retry, a replay) and answers it without acting twice;
  kept for `keep`, after which the same delivery would be acted on again. Slack retries within
  minutes and Standard Webhooks senders within a day or two, so the gateway's default
  (`ROLECALL_RECEIPT_DAYS`, a week) is well past both; and both signatures are refused five
  minutes after they were made, so an old delivery cannot be replayed. The receipts of sources
  whose signature has no time (GitHub, generic) are never deleted: they are what refuses a
  captured delivery sent again, however late.
- **Slack OAuth states** (`slack_oauth_states`) past their expiry: installs begun in a browser
  and never finished. The OAuth flow consumes (deletes) a state when the install finishes and
  refuses an expired one, so deleting these changes no answer.
- **Rate buckets** (`rate_buckets`, `core.storage.rates_store`) idle for longer than a bucket
  takes to fill (`buckets_idle`, which the gateway works out from the rates it sets): such a
  bucket is full, as a key never seen is, so deleting it changes no answer either.

`Prune` deletes at most `limit` rows of one table per write batch, so that no
batch holds the writer long; `SqlHousekeeping.prune` repeats it until a table has nothing left to
delete. Link codes need nothing here: minting a code deletes the long-expired ones.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, timedelta
from enum import Enum

from sqlalchemy import Table, and_, delete, select, tuple_
from sqlalchemy.sql.elements import ColumnElement

from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.rows import from_micros
from core.storage.writer import Writer

CHUNK = 2_000
"""Rows deleted per write batch."""
_MICROSECOND = timedelta(microseconds=1)
BUCKETS_IDLE = timedelta(hours=1)
"""How long a rate bucket is kept after its last take, by default."""


class Kept(Enum):
    """What housekeeping deletes, by the table it is in."""

    SLACK_EVENTS = "slack_events"
    WEBHOOK_DELIVERIES = "webhook_deliveries"
    OAUTH_STATES = "slack_oauth_states"
    RATE_BUCKETS = "rate_buckets"


@dataclass(frozen=True, slots=True)
class Pruned:
    """Rows deleted, by what they were."""

    counts: dict[Kept, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class Prune(NoRuns):
    """Delete up to `limit` rows of `kept` that are past their time: receipts received more than
    `keep` before the batch's time, OAuth states expired before it, rate buckets last taken from
    more than `keep` before it. Returns how many went."""

    kept: Kept
    keep: timedelta
    limit: int = CHUNK
    sources: tuple[str, ...] = ()
    """The webhook sources whose receipts may go (none: no webhook receipt goes)."""
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], int]:
        table, key, older = self._rows(batch.now)
        chosen = select(*key).where(older).limit(self.limit)
        if len(key) == 1:
            doomed: ColumnElement[bool] = key[0].in_(chosen.scalar_subquery())
        else:
            doomed = tuple_(*key).in_(chosen)
        deleted = batch.connection.execute(delete(table).where(doomed)).rowcount
        return lambda: deleted

    def _rows(self, now: int) -> tuple[Table, list[ColumnElement[object]], ColumnElement[bool]]:
        """The table, the columns naming one of its rows, and which rows are past their time."""
        if self.kept is Kept.SLACK_EVENTS:
            events = schema.slack_events
            cut = now - self.keep // _MICROSECOND
            return events, [events.c.event_id], events.c.received_at < cut
        if self.kept is Kept.WEBHOOK_DELIVERIES:
            hooks = schema.webhook_deliveries
            cut = now - self.keep // _MICROSECOND
            older = and_(hooks.c.received_at < cut, hooks.c.source.in_(self.sources))
            return hooks, [hooks.c.source, hooks.c.delivery_id], older
        if self.kept is Kept.RATE_BUCKETS:
            buckets = schema.rate_buckets
            cut = now - self.keep // _MICROSECOND
            return buckets, [buckets.c.key], buckets.c.at < cut
        states = schema.slack_oauth_states
        # slack_sdk's store writes naive UTC datetimes (`datetime.utcfromtimestamp`)
        expired = from_micros(now).astimezone(UTC).replace(tzinfo=None)
        return states, [states.c.id], states.c.expire_at < expired


class SqlHousekeeping:
    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    async def prune(
        self,
        *,
        receipts_for: timedelta,
        sources: Collection[str] = (),
        buckets_idle: timedelta = BUCKETS_IDLE,
        limit: int = CHUNK,
    ) -> Pruned:
        """Delete the Slack event receipts and the receipts of the webhook `sources` older than
        `receipts_for`, every expired OAuth state, and the rate buckets idle for longer than
        `buckets_idle` (at least the time a bucket takes to fill), `limit` rows a write batch."""
        counts: dict[Kept, int] = {}
        named = tuple(sorted(sources))
        for kept in Kept:
            counts[kept] = 0
            if kept is Kept.WEBHOOK_DELIVERIES and not named:
                continue
            keep = buckets_idle if kept is Kept.RATE_BUCKETS else receipts_for
            while True:
                deleted = await self._writer.run(Prune(kept, keep, limit, named))
                counts[kept] += deleted
                if deleted < limit:
                    break
        return Pruned(counts)
