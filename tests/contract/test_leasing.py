"""Leases on PostgreSQL, where replicas share them: a claim takes a new fence, a lease held is
not claimable by another until it is released or expires, a release under an old fence frees
nothing, and a write under a lost fence is refused (the endpoint's cursors, the Slack cursor and
outbox) — through `SqlLeases` and through the workers' helper, `channels.edge.leasing`, and the
housekeeping pass that runs on one replica only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from channels.edge.leasing import SOLE, Held, Leasing
from core.model.endpoints import Cursors, EndpointStatus, Filters, Standing
from core.model.leases import Fence, LeaseKind, LeaseLost
from core.model.timeline import EventId, Message
from core.storage.database import Database, open_database
from gateway.housekeeping import pass_if_held
from gateway.metrics import Metrics
from tests.conftest import _empty_postgres
from tests.settings import make_settings

pytestmark = pytest.mark.postgres

HOUR = 3_600_000_000
"""A lease's time, in microseconds, that no test outlives."""
GONE = 1
"""A lease's time that has passed by the next statement."""
SECRET = "whsec_" + "A" * 43 + "="


@pytest.fixture
async def db(postgres_database: str) -> AsyncIterator[Database]:
    await _empty_postgres(postgres_database)
    database = await open_database(postgres_database)
    try:
        yield database
    finally:
        await database.close()


def _leasing(db: Database, holder: str, *, ttl: int = HOUR) -> Leasing:
    return Leasing(db.leases, holder, ttl=ttl, retry_every=0.1)


async def test_a_lease_is_held_by_one_holder_and_each_claim_takes_a_new_fence(
    db: Database,
) -> None:
    first = await db.leases.claim(LeaseKind.ENDPOINT, "e1", "a", HOUR)
    assert first == Fence(holder="a", number=1)
    assert await db.leases.claim(LeaseKind.ENDPOINT, "e1", "b", HOUR) is None
    again = await db.leases.claim(LeaseKind.ENDPOINT, "e1", "a", HOUR)
    assert again == Fence(holder="a", number=2)  # even its own holder's claim is a new one
    # Another subject, or another kind of the same subject, is a lease of its own.
    assert await db.leases.claim(LeaseKind.SLACK, "e1", "b", HOUR) == Fence(holder="b", number=1)

    assert not await db.leases.release(LeaseKind.ENDPOINT, "e1", first)  # a late release
    assert await db.leases.claim(LeaseKind.ENDPOINT, "e1", "b", HOUR) is None
    assert await db.leases.release(LeaseKind.ENDPOINT, "e1", again)
    lease = await db.leases.get(LeaseKind.ENDPOINT, "e1")
    assert lease is not None and not lease.held and lease.fence == 2
    assert await db.leases.claim(LeaseKind.ENDPOINT, "e1", "b", HOUR) == Fence(holder="b", number=3)


async def test_an_expired_lease_is_claimable_and_a_renewed_one_is_not(db: Database) -> None:
    old = await db.leases.claim(LeaseKind.SLACK, "echo", "a", GONE)
    assert old is not None
    assert (await db.replicas.beat("a", ttl=HOUR)).held == [("slack", "echo")]  # a's heartbeat
    assert await db.leases.claim(LeaseKind.SLACK, "echo", "b", HOUR) is None
    assert await db.leases.claim(LeaseKind.SLACK, "other", "a", GONE) is not None
    taken = await db.leases.claim(LeaseKind.SLACK, "other", "b", HOUR)  # a did not beat
    assert taken == Fence(holder="b", number=2)


async def test_a_lease_handed_back_is_orphaned_and_free(db: Database) -> None:
    fence = await db.leases.claim(LeaseKind.ENDPOINT, "e1", "a", HOUR)
    assert fence is not None
    assert await db.leases.release(LeaseKind.ENDPOINT, "e1", fence, handed_back=True)
    lease = await db.leases.get(LeaseKind.ENDPOINT, "e1")
    assert lease is not None and not lease.held and lease.orphaned(now=lease.expires_at)
    assert await db.leases.claim(LeaseKind.ENDPOINT, "e1", "b", HOUR) is not None


async def test_an_endpoints_cursors_are_not_moved_under_a_lost_fence(db: Database) -> None:
    endpoint = await db.endpoints.create(
        url="https://x.example/h", secret=SECRET, filters=Filters()
    )
    start = endpoint.cursors
    ahead = Cursors(position=start.position + 1, task_position=start.task_position)
    ok = Standing(status=EndpointStatus.ACTIVE)
    lost = await db.leases.claim(LeaseKind.ENDPOINT, endpoint.id, "a", GONE)
    holder = await db.leases.claim(LeaseKind.ENDPOINT, endpoint.id, "b", HOUR)
    assert lost is not None and holder is not None

    with pytest.raises(LeaseLost) as refused:
        await db.endpoints.record(endpoint.id, seen=start, cursors=ahead, standing=ok, fence=lost)
    assert refused.value.code == "lease_lost"
    assert (await db.endpoints.get(endpoint.id)).cursors == start
    assert await db.endpoints.record(
        endpoint.id, seen=start, cursors=ahead, standing=ok, fence=holder
    )
    assert (await db.endpoints.get(endpoint.id)).cursors == ahead


async def test_slacks_cursor_and_outbox_are_not_written_under_a_lost_fence(db: Database) -> None:
    lost = await db.leases.claim(LeaseKind.SLACK, "echo", "a", GONE)
    holder = await db.leases.claim(LeaseKind.SLACK, "echo", "b", HOUR)
    assert lost is not None and holder is not None
    await db.slack.advance("echo", 5, fence=holder)

    with pytest.raises(LeaseLost):
        await db.slack.advance("echo", 9, fence=lost)
    with pytest.raises(LeaseLost):  # nothing may be posted: the intent comes first
        await db.slack.intend("echo", EventId("m1"), "D1", fence=lost)
    assert await db.slack.cursor("echo") == 5
    assert await db.slack.intents("echo") == []
    assert await db.slack.intend("echo", EventId("m1"), "D1", fence=holder)
    await db.slack.advance("echo", 9, fence=holder)
    assert await db.slack.cursor("echo") == 9


async def test_the_helper_holds_for_one_replica_and_claims_only_what_is_free(
    db: Database,
) -> None:
    a, b = _leasing(db, "a"), _leasing(db, "b")
    assert a.shared and b.known(LeaseKind.ENDPOINT, "e1") is None
    held = await a.hold(LeaseKind.ENDPOINT, "e1")
    assert held == Held(Fence(holder="a", number=1))
    assert await b.hold(LeaseKind.ENDPOINT, "e1") is None
    assert await a.hold(LeaseKind.ENDPOINT, "e1") == held  # known and still the lease's
    assert a.known(LeaseKind.ENDPOINT, "e1") == held
    lease = await db.leases.get(LeaseKind.ENDPOINT, "e1")
    assert lease is not None and lease.fence == 1  # asking again claims nothing

    await a.release(LeaseKind.ENDPOINT, "e1")
    assert a.known(LeaseKind.ENDPOINT, "e1") is None
    assert await b.hold(LeaseKind.ENDPOINT, "e1") == Held(Fence(holder="b", number=2))
    assert await a.hold(LeaseKind.ENDPOINT, "e1") is None


async def test_the_helper_finds_a_lease_lost_when_it_expired_and_another_claimed_it(
    db: Database,
) -> None:
    a, b = _leasing(db, "a", ttl=GONE), _leasing(db, "b")
    stale = await a.hold(LeaseKind.SLACK, "echo")
    assert stale is not None
    taken = await b.hold(LeaseKind.SLACK, "echo")  # a did not beat in time
    assert taken == Held(Fence(holder="b", number=2))
    assert a.known(LeaseKind.SLACK, "echo") == stale  # a cannot know without asking…
    assert await a.hold(LeaseKind.SLACK, "echo") is None  # …and asking tells it
    assert a.known(LeaseKind.SLACK, "echo") is None
    assert stale.fence is not None
    with pytest.raises(LeaseLost):
        await db.slack.advance("echo", 3, fence=stale.fence)

    # Expired but claimed by nobody: still its holder's to claim again, under a new fence.
    c = _leasing(db, "c", ttl=GONE)
    first = await c.hold(LeaseKind.HOUSEKEEPING, "prune")
    again = await c.hold(LeaseKind.HOUSEKEEPING, "prune")
    assert first is not None and again is not None and first != again
    c.lost(LeaseKind.HOUSEKEEPING, "prune")
    assert c.known(LeaseKind.HOUSEKEEPING, "prune") is None


async def test_one_process_holds_everything_without_a_claim(db: Database) -> None:
    sole = Leasing.sole()
    assert not sole.shared
    assert await sole.hold(LeaseKind.ENDPOINT, "e1") == SOLE
    assert sole.known(LeaseKind.ENDPOINT, "e1") == SOLE and SOLE.fence is None
    await sole.release(LeaseKind.ENDPOINT, "e1")
    assert await db.leases.get(LeaseKind.ENDPOINT, "e1") is None


async def test_housekeeping_runs_on_the_replica_holding_it(db: Database, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    a, b = _leasing(db, "a"), _leasing(db, "b")
    assert await pass_if_held(db, settings, Metrics(), (), a, roles={}) is not None
    assert await pass_if_held(db, settings, Metrics(), (), b, roles={}) is None
    assert await pass_if_held(db, settings, Metrics(), (), a, roles={}) is not None
    await db.replicas.stop("a")  # a stops
    assert await pass_if_held(db, settings, Metrics(), (), b, roles={}) is not None
    assert await pass_if_held(db, settings, Metrics(), (), a, roles={}) is None


async def test_a_runs_turn_end_and_cursor_move_are_refused_under_a_lost_fence(
    db: Database,
) -> None:
    from core.model.participants import Address, ParticipantSet
    from core.model.runs.run import TurnCause, TurnOutcome
    from core.storage.runs_store import TurnRecord

    thread, _ = await db.threads.resolve(ParticipantSet.of(["person:ann", "role:echo"]))
    await db.threads.post_message(thread.id, Address("person:ann"), "hello")
    run, _ = await db.runs.ensure_conversation_run(thread.id, "echo")
    stalled = await db.leases.claim(LeaseKind.RUN, run.id, "a", GONE, thread_id=thread.id)
    taken = await db.leases.claim(LeaseKind.RUN, run.id, "b", HOUR, thread_id=thread.id)
    assert stalled is not None and taken is not None and taken.number == stalled.number + 1
    record = TurnRecord(
        session_id=run.session.id,
        cause=TurnCause.MESSAGE,
        outcome=TurnOutcome.REPLIED,
        queued_at=0,
        started_at=0,
        finished_at=0,
        prompt={},
        steps=[],
        attempts=[],
    )

    async def finish(fence: Fence) -> None:
        await db.runs.finish_turn(
            run, cursor_to=1, task_cursor_to=0, messages=["hi"], notice=None,
            record=record, session_state=None, fence=fence,
        )  # fmt: skip

    with pytest.raises(LeaseLost):
        await finish(stalled)
    with pytest.raises(LeaseLost):
        await db.runs.advance_cursor(run, 1, 0, fence=stalled)
    assert await _authors(db) == ["person:ann"]  # nothing of the stalled one
    assert (await db.runs.get(run.id)).cursor == run.cursor
    await finish(taken)  # the new owner's end commits
    assert await _authors(db) == ["person:ann", "role:echo"]


async def _authors(db: Database) -> list[str]:
    page = await db.threads.events_since(0, limit=10)
    return [e.author for e in page.events if isinstance(e, Message)]
