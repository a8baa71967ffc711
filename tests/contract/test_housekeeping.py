"""Housekeeping on every backend: delivery receipts older than the time they are kept for (Slack's,
and those of the webhook sources named), and Slack OAuth states past their expiry, are deleted —
in chunks, until none is left — and nothing younger goes, nor any receipt of another source; a
delivery whose receipt is gone is recognised no more."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from core.model.webhooks import Source, SourceKind, map_github
from core.storage import open_database, schema
from core.storage.housekeeping_store import Kept
from core.storage.slack_store import SlackDelivery

GH = Source(name="gh", kind=SourceKind.GITHUB, secret="GH_SECRET")
PING = map_github(GH, "ping", {"zen": "Keep it logically awesome."})
WEEK = timedelta(days=7)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def delivery(n: int) -> SlackDelivery:
    return SlackDelivery(event_id=f"Ev{n:04d}", role="echo", team_id="T1", channel_id="D1")


async def states_left(url: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            table = schema.slack_oauth_states
            return int(
                (await connection.execute(select(func.count()).select_from(table))).scalar_one()
            )
    finally:
        await engine.dispose()


async def test_receipts_past_their_time_go_in_chunks_and_younger_ones_stay(
    database_url: str,
) -> None:
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    try:
        old = clock.now
        for n in range(7):  # received eight days ago
            assert await db.slack.seen(delivery(n))
            await db.webhooks.receive("tracker", f"d-{n}", PING)
            await db.webhooks.receive("gh", f"d-{n}", PING)
        clock.now = old + timedelta(days=7, hours=23)  # received a day later: a week ago, just
        assert await db.slack.seen(delivery(100))
        await db.webhooks.receive("tracker", "d-100", PING)
        clock.now = old + timedelta(days=8, minutes=1)

        pruned = await db.housekeeping.prune(receipts_for=WEEK, sources={"tracker"}, limit=3)

        assert pruned.counts[Kept.SLACK_EVENTS] == 7  # in three batches: 3 + 3 + 1
        assert pruned.counts[Kept.WEBHOOK_DELIVERIES] == 7
        assert pruned.total == 14
        assert await db.slack.delivered("Ev0100")
        assert await db.webhooks.delivered("tracker", "d-100")
        for n in range(7):
            assert not await db.slack.delivered(f"Ev{n:04d}")
            assert not await db.webhooks.delivered("tracker", f"d-{n}")
            assert await db.webhooks.delivered("gh", f"d-{n}")  # a source not named keeps all
        # the same delivery now would be taken as a first one
        assert await db.slack.seen(delivery(0))
        assert not (await db.webhooks.receive("tracker", "d-0", PING)).duplicate

        again = await db.housekeeping.prune(receipts_for=WEEK, sources={"tracker"})
        assert again.total == 0
        untimed = await db.housekeeping.prune(receipts_for=WEEK)  # no source named
        assert untimed.counts[Kept.WEBHOOK_DELIVERIES] == 0
        assert await db.webhooks.delivered("gh", "d-0")
    finally:
        await db.close()


async def test_expired_oauth_states_go_and_live_ones_stay(database_url: str) -> None:
    engine = create_async_engine(database_url)
    try:
        table = schema.slack_oauth_states.name
        short = AsyncSQLAlchemyOAuthStateStore(600, engine, table_name=table)
        long = AsyncSQLAlchemyOAuthStateStore(86_400, engine, table_name=table)
        expiring = [await short.async_issue() for _ in range(2)]
        live = await long.async_issue()
    finally:
        await engine.dispose()
    clock = Clock()
    clock.now = datetime.fromtimestamp(time.time() + 3600, UTC)  # an hour on: 600 s is past
    db = await open_database(database_url, clock=clock)
    try:
        pruned = await db.housekeeping.prune(receipts_for=WEEK)
        assert pruned.counts[Kept.OAUTH_STATES] == 2
    finally:
        await db.close()
    assert await states_left(database_url) == 1
    engine = create_async_engine(database_url)
    try:
        store = AsyncSQLAlchemyOAuthStateStore(86_400, engine, table_name=table)
        assert await store.async_consume(live)  # the install can still finish
        assert not await store.async_consume(expiring[0])
    finally:
        await engine.dispose()


async def test_rate_buckets_idle_past_their_fill_time_go_and_busy_ones_stay(
    database_url: str,
) -> None:
    """A bucket nobody took from for longer than `buckets_idle` is deleted (it is full, as a
    new key's is); one taken from since stays with its level."""
    from core.storage.rates_store import Rate

    clock = Clock()
    db = await open_database(database_url, clock=clock)
    rate = Rate(per_second=1 / 60, burst=2)
    try:
        await db.rates.take("web:idle", rate)
        await db.rates.take("web:busy", rate)
        clock.now += timedelta(hours=2)
        await db.rates.take("web:busy", rate)
        pruned = await db.housekeeping.prune(receipts_for=WEEK, buckets_idle=timedelta(hours=1))
        assert pruned.counts[Kept.RATE_BUCKETS] == 1
        # the busy one kept its level (one token left of two): one more take, then a wait
        assert await db.rates.take("web:busy", rate) == 0
        assert await db.rates.take("web:busy", rate) > 0
        assert await db.rates.take("web:idle", rate) == 0  # a full bucket again
    finally:
        await db.close()
