"""The audit trail on every backend (`core.storage.audit_store`): records are numbered in commit
order without gaps, read forward from a position or backward from the newest, filtered by actor
and action, and deleted only past a time, in batches."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from core.model.audit import Action
from core.storage import Database, open_database


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def done(actor: str = "ci", action: str = "run.cancel", **detail: object) -> Action:
    return Action(actor=actor, client="127.0.0.1", action=action, detail=detail, request_id="req-1")


async def test_a_record_keeps_who_when_where_what_and_its_position(database_url: str) -> None:
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    try:
        first = await db.audit.record(done(run_id="r1", before={"n": 1}, after={"n": 2}))
        second = await db.audit.record(done(actor="alice", action="token.create", name="x"))
        assert (first.position, second.position) == (1, 2)
        page = await db.audit.page(limit=10)
        assert [r.to_json() for r in page.records] == [first.to_json(), second.to_json()]
        assert page.records[0].to_json() == {
            "position": 1,
            "at": "2026-12-05T09:00:00.000000Z",
            "actor": "ci",
            "client": "127.0.0.1",
            "action": "run.cancel",
            "detail": {"run_id": "r1", "before": {"n": 1}, "after": {"n": 2}},
            "request_id": "req-1",
        }
    finally:
        await db.close()


async def test_records_made_at_once_get_every_position_once(database: Database) -> None:
    """Records made at once share write batches, which number them together: each caller is
    answered with the position its own record was stored at."""
    made = await asyncio.gather(*(database.audit.record(done(n=n)) for n in range(40)))
    assert sorted(r.position for r in made) == list(range(1, 41))
    page = await database.audit.page(limit=100)
    assert [r.position for r in page.records] == list(range(1, 41))
    assert {r.position: r.to_json() for r in page.records} == {
        r.position: r.to_json() for r in made
    }


async def test_pages_forward_and_backward_with_filters(database: Database) -> None:
    for n in range(7):
        actor = "alice" if n % 2 else "ci"
        await database.audit.record(done(actor=actor, action="task.create", n=n))
    await database.audit.record(done(action="token.revoke"))  # position 8

    forward = await database.audit.page(after=0, limit=3)
    assert [r.position for r in forward.records] == [1, 2, 3]
    assert (forward.next, forward.more) == (3, True)
    tail = await database.audit.page(after=6, limit=3)
    assert [r.position for r in tail.records] == [7, 8]
    assert (tail.next, tail.more) == (8, False)
    beyond = await database.audit.page(after=8, limit=3)
    assert (list(beyond.records), beyond.next, beyond.more) == ([], 8, False)

    newest = await database.audit.page(newest=True, limit=3)
    assert [r.position for r in newest.records] == [6, 7, 8]
    assert (newest.next, newest.more) == (6, True)
    earlier = await database.audit.page(before=newest.next, limit=3)
    assert [r.position for r in earlier.records] == [3, 4, 5]
    first = await database.audit.page(before=3, limit=3)
    assert [r.position for r in first.records] == [1, 2]
    assert (first.next, first.more) == (None, False)

    alice = await database.audit.page(actor="alice", limit=10)
    assert [r.position for r in alice.records] == [2, 4, 6]
    revoked = await database.audit.page(action="token.revoke", newest=True, limit=10)
    assert [r.position for r in revoked.records] == [8]
    both = await database.audit.page(actor="ci", action="task.create", after=1, limit=10)
    assert [r.position for r in both.records] == [3, 5, 7]


async def test_pruning_deletes_only_what_is_older_in_batches(database_url: str) -> None:
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    try:
        for n in range(7):
            await db.audit.record(done(n=n))
        clock.now += timedelta(days=1)
        kept = await db.audit.record(done(n="kept"))  # a day younger

        day = timedelta(days=1)
        assert await db.audit.prune(keep=day) == 0  # nothing is older than a day yet
        clock.now += day
        assert await db.audit.prune(keep=day, limit=3) == 7  # 3 + 3 + 1
        page = await db.audit.page(limit=10)
        assert [r.position for r in page.records] == [kept.position]  # exactly a day old
        assert await db.audit.prune(keep=day) == 0
        after = await db.audit.record(done(n="after"))
        assert after.position == kept.position + 1  # positions are never given again
    finally:
        await db.close()
