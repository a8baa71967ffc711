"""Limits counted where every replica sees them (SQLite and PostgreSQL): a run's tool budget
(`core.engine.tools.budget`, `core.storage.budgets_store`) and the widget's posting rate
(`channels.web.limits`, `core.storage.rates_store`).

Two `open_database` on one database stand for two replicas (on SQLite, two processes' worth of
storage on one file). The clock of the rate is driven, never slept on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import Connection, select

from channels.web.limits import KEY, PostingRate
from core.engine.tools.budget import LocalBudgets, SharedBudgets, ToolBudget
from core.model.errors import LimitReached
from core.storage import schema
from core.storage.database import Database, open_database
from core.storage.ids import new_id
from core.storage.rates_store import Bucket, Rate, take

RUN = new_id()


@pytest.fixture
async def replicas(database_url: str) -> AsyncIterator[tuple[Database, Database]]:
    a = await open_database(database_url)
    try:
        b = await open_database(database_url)
        try:
            yield a, b
        finally:
            await b.close()
    finally:
        await a.close()


async def _refused(budget: ToolBudget) -> LimitReached:
    with pytest.raises(LimitReached) as refusal:
        await budget.spend("store")
    assert refusal.value.code == "tool_budget_spent"
    return refusal.value


# --- tool budgets ---------------------------------------------------------------------------


async def test_a_budget_refuses_the_call_past_its_limit_whichever_replica_takes_it(
    replicas: tuple[Database, Database],
) -> None:
    owner, other = SharedBudgets(replicas[0]), SharedBudgets(replicas[1])
    running = await owner.open(RUN, 3)
    # the host's own budget, a surface of the owner's replica, a surface of the other replica
    for budget in (running, owner.find(RUN), other.find(RUN)):
        assert budget is not None
        await budget.spend("recall")
    there = other.find(RUN)
    assert there is not None
    refusal = await _refused(there)
    assert "3 tool calls" in refusal.message
    await _refused(running)
    assert await running.refusals() == 2
    assert (running.used, running.refused, running.limit) == (3, 2, 3)


async def test_spends_at_once_from_two_replicas_grant_exactly_the_allowance(
    replicas: tuple[Database, Database],
) -> None:
    owner, other = SharedBudgets(replicas[0]), SharedBudgets(replicas[1])
    running = await owner.open(RUN, 5)

    async def call(budgets: SharedBudgets) -> bool:
        budget = budgets.find(RUN)
        assert budget is not None
        try:
            await budget.spend("recall")
        except LimitReached:
            return False
        return True

    granted = await asyncio.gather(*(call(owner if i % 2 else other) for i in range(12)))
    assert sum(granted) == 5
    assert await running.refusals() == 7
    stored = await replicas[1].budgets.read(RUN)
    assert stored is not None and (stored.used, stored.refused) == (5, 7)


async def test_a_new_attempt_has_its_calls_afresh_and_the_old_one_keeps_what_it_saw(
    replicas: tuple[Database, Database],
) -> None:
    owner, other = SharedBudgets(replicas[0]), SharedBudgets(replicas[1])
    first = await owner.open(RUN, 1)
    there = other.find(RUN)
    assert there is not None
    await there.spend("recall")
    await _refused(there)
    second = await owner.open(RUN, 1)
    await there.spend("recall")  # the same surface, now counting against the new attempt
    assert await second.refusals() == 0
    assert await first.refusals() == 0  # what it last saw: the row is the new attempt's now
    await _refused(there)
    assert await second.refusals() == 1
    await owner.close(first)  # an older attempt's close leaves the newer one alone
    await _refused(there)
    assert await second.refusals() == 2


async def test_calls_while_no_attempt_runs_are_not_counted(
    replicas: tuple[Database, Database],
) -> None:
    owner, other = SharedBudgets(replicas[0]), SharedBudgets(replicas[1])
    there = other.find(RUN)
    assert there is not None
    await there.spend("recall")  # no attempt has begun
    running = await owner.open(RUN, 1)
    await there.spend("recall")
    await owner.close(running)
    for _ in range(3):
        await there.spend("recall")  # between turns
    assert await replicas[0].budgets.read(RUN) is None


async def test_in_one_process_the_budget_is_in_memory() -> None:
    budgets = LocalBudgets()
    budget = await budgets.open(RUN, 1)
    assert type(budget) is ToolBudget
    assert budgets.find(RUN) is None  # only the host running the turn holds it
    await budget.spend("recall")
    await _refused(budget)
    assert await budget.refusals() == 1


# --- posting rate ---------------------------------------------------------------------------


class Clock:
    """Seconds of a wall clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_the_posting_rate_is_one_bucket_across_replicas_and_refills_with_time(
    replicas: tuple[Database, Database],
) -> None:
    clock = Clock()
    a, b = (PostingRate.shared(db, 60, burst=10, clock=clock) for db in replicas)
    for i in range(10):
        assert await (a if i % 2 else b).take("web:ann") == 0
    wait = await b.take("web:ann")
    assert wait == pytest.approx(1.0)
    assert PostingRate.retry_after(wait) == 1
    assert await a.take("web:ann") == pytest.approx(1.0)  # refused: nothing was taken
    assert await a.take("web:bob") == 0  # each identity has its own bucket
    clock.now += 0.5
    assert await a.take("web:ann") == pytest.approx(0.5)
    clock.now += 0.5
    assert await b.take("web:ann") == 0
    assert await a.take("web:ann") == pytest.approx(1.0)
    clock.now += 60  # full again, never past the burst
    assert [await (a, b)[i % 2].take("web:ann") for i in range(11)][-2:] == [0, 1.0]


async def test_posts_at_once_from_two_replicas_take_exactly_the_burst(
    replicas: tuple[Database, Database],
) -> None:
    clock = Clock()
    a, b = (PostingRate.shared(db, 6, burst=10, clock=clock) for db in replicas)
    waits = await asyncio.gather(*((a, b)[i % 2].take("web:new") for i in range(16)))
    assert waits.count(0) == 10
    assert all(wait == pytest.approx(10.0) for wait in waits if wait)


async def test_the_bucket_is_stored_under_the_widgets_key(
    replicas: tuple[Database, Database],
) -> None:
    clock = Clock()
    rate = PostingRate.shared(replicas[0], 60, burst=2, clock=clock)
    await rate.take("web:ann")

    def level(connection: Connection) -> list[tuple[str, float]]:
        table = schema.rate_buckets
        return [(k, v) for k, v in connection.execute(select(table.c.key, table.c.level))]

    assert await replicas[1]._reads.transact(level) == [(KEY + "web:ann", 1.0)]


async def test_in_one_process_the_rate_is_in_memory_with_the_same_answers() -> None:
    clock = Clock()
    rate = PostingRate(60, burst=10, clock=clock)
    assert [await rate.take("web:ann") for _ in range(10)] == [0] * 10
    assert await rate.take("web:ann") == pytest.approx(1.0)
    clock.now += 1
    assert await rate.take("web:ann") == 0


def test_a_bucket_fills_at_its_rate_up_to_its_burst_and_never_from_a_clock_behind() -> None:
    rate = Rate(per_second=2.0, burst=3.0)
    bucket, wait = take(None, rate, 0)
    assert (bucket, wait) == (Bucket(level=2.0, at=0), 0.0)
    bucket, wait = take(Bucket(level=0.5, at=1_000_000), rate, 1_000_000)
    assert wait == pytest.approx(0.25) and bucket.level == 0.5
    bucket, _ = take(Bucket(level=0.0, at=0), rate, 10_000_000)
    assert bucket == Bucket(level=2.0, at=10_000_000)
    bucket, wait = take(Bucket(level=0.0, at=5_000_000), rate, 4_000_000)  # another's clock
    assert bucket == Bucket(level=0.0, at=5_000_000) and wait == pytest.approx(0.5)
