"""Approvals on every backend: asked in the conversation, resolved exactly once (however many
answers race), refused to whoever may not answer, expired only once their time has passed,
and heard by a waiter whenever the resolution commits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.engine.approvals import wait_for_answer
from core.model.approvals import (
    YES_NO,
    ApprovalClosed,
    ApprovalRequest,
    Outcome,
)
from core.model.errors import Conflict, InvalidInput, NotAllowed, NotFound
from core.model.membership import ParticipantState
from core.model.participants import Address, ParticipantSet
from core.model.timeline import ApprovalRequested, ApprovalResolved, EventId, ThreadId
from core.storage.database import Database, open_database
from gateway.housekeeping import expire_approvals
from tests.approvals import ALLOW, restart_request

ALICE, BOB, ROLE = Address("person:alice"), Address("person:bob"), Address("role:ops")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 3, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def db(database_url: str, clock: Clock) -> AsyncIterator[Database]:
    opened = await open_database(database_url, clock=clock)
    try:
        yield opened
    finally:
        await opened.close()


async def asked(
    db: Database, clock: Clock, *, approvers: tuple[Address, ...] = (), minutes: int = 10
) -> tuple[ThreadId, ApprovalRequested]:
    """The role asks in the thread of Alice, Bob and itself, now by the clock."""
    thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, BOB, ROLE]))
    request = restart_request(
        approvers=approvers, now=clock.now, expires_in=timedelta(minutes=minutes)
    )
    return thread.id, await db.approvals.request(thread.id, "run1", ROLE, request)


async def test_a_request_is_an_event_of_the_timeline_and_pending_until_answered(
    db: Database, clock: Clock
) -> None:
    thread_id, event = await asked(db, clock)
    timeline = await db.threads.timeline(thread_id, viewer=ALICE)
    assert timeline.events == [event]
    assert event.tool is not None and event.tool.arguments == {"command": "systemctl restart web"}
    assert event.expires_at == clock.now + timedelta(minutes=10)
    assert [r.id for r, _ in await db.approvals.of_thread(thread_id, pending=True)] == [event.id]

    resolved = await db.approvals.answer(event, ALICE, "allow", channel="slack")
    assert (resolved.outcome, resolved.option, resolved.by, resolved.channel) == (
        Outcome.ANSWERED,
        ALLOW,
        ALICE,
        "slack",
    )
    assert resolved.resolution.allows
    assert await db.approvals.of_thread(thread_id, pending=True) == []
    request_read, resolution_read = await db.approvals.get(event.id)
    assert (request_read, resolution_read) == (event, resolved)
    assert (await db.threads.timeline(thread_id)).events[-1] == resolved


async def test_of_many_answers_at_once_exactly_one_wins_and_the_others_are_told_who(
    db: Database, clock: Clock
) -> None:
    _, event = await asked(db, clock)
    answers = await asyncio.gather(
        *(
            db.approvals.answer(event, who, option, channel=channel)
            for who, option, channel in [
                (ALICE, "allow", "slack"),
                (BOB, "reject", "web"),
                (ALICE, "allow", "slack"),
                (BOB, "allow", "api"),
            ]
        ),
        return_exceptions=True,
    )
    won = [a for a in answers if isinstance(a, ApprovalResolved)]
    refused = [a for a in answers if isinstance(a, ApprovalClosed)]
    assert len(won) == 1 and len(refused) == 3
    assert all(f"by {won[0].by}" in r.message for r in refused)
    _, resolution = await db.approvals.get(event.id)
    assert resolution == won[0]


async def test_who_may_not_answer_is_refused_and_nothing_changes(
    db: Database, clock: Clock
) -> None:
    thread_id, event = await asked(db, clock, approvers=(BOB,))
    with pytest.raises(NotAllowed) as not_approver:
        await db.approvals.answer(event, ALICE, "allow", channel="web")
    assert not_approver.value.code == "not_an_approver"
    with pytest.raises(NotAllowed) as outsider:
        await db.approvals.answer(event, Address("person:carol"), "allow", channel="web")
    assert outsider.value.code == "not_a_member"
    with pytest.raises(NotAllowed) as role:
        await db.approvals.answer(event, ROLE, "allow", channel="api")
    assert role.value.code == "not_an_approver"
    with pytest.raises(InvalidInput) as option:
        await db.approvals.answer(event, BOB, "maybe", channel="web")
    assert option.value.code == "unknown_option" and "allow, reject" in option.value.message
    await db.threads.set_participant_state(thread_id, BOB, ParticipantState.REMOVED)
    with pytest.raises(NotAllowed) as removed:
        await db.approvals.answer(event, BOB, "allow", channel="web")
    assert removed.value.code == "participant_removed"
    with pytest.raises(NotFound):
        await db.approvals.get(EventId("nope"))
    with pytest.raises(NotFound):  # the writer's check reads it again
        await db.approvals.answer(replace(event, id=EventId("nope")), ALICE, "allow", channel="web")
    assert [r.id for r, _ in await db.approvals.of_thread(thread_id, pending=True)] == [event.id]


async def test_expiry_resolves_once_and_only_after_its_time(db: Database, clock: Clock) -> None:
    thread_id, event = await asked(db, clock, minutes=1)
    assert await db.approvals.due(clock.now) == []
    with pytest.raises(Conflict) as early:
        await db.approvals.expire(event.id, thread_id)
    assert early.value.code == "not_expired"
    clock.now += timedelta(minutes=1)
    assert await db.approvals.due(clock.now) == [(event.id, thread_id)]
    expired = await db.approvals.expire(event.id, thread_id)
    assert expired.outcome is Outcome.EXPIRED and not expired.resolution.allows
    with pytest.raises(ApprovalClosed) as late:
        await db.approvals.answer(event, ALICE, "allow", channel="web")
    assert "expired" in late.value.message
    assert await db.approvals.due(clock.now) == []
    with pytest.raises(ApprovalClosed):
        await db.approvals.expire(event.id, thread_id)


async def test_a_waiter_hears_the_resolution_committed_after_it_began_waiting(
    db: Database, clock: Clock
) -> None:
    _, event = await asked(db, clock)
    waiting = asyncio.create_task(db.approvals.wait(event.id))
    await asyncio.sleep(0)
    answered = await db.approvals.answer(event, BOB, "reject", channel="web")
    async with asyncio.timeout(10):
        assert await waiting == answered
    assert not answered.resolution.allows
    # Already resolved: answered at once, from the database.
    async with asyncio.timeout(10):
        assert await db.approvals.wait(event.id) == answered
    cancelled_thread, other = await asked(db, clock)
    waiter = asyncio.create_task(db.approvals.wait(other.id))
    await db.approvals.cancel(other.id, cancelled_thread)
    async with asyncio.timeout(10):
        assert (await waiter).outcome is Outcome.CANCELLED


async def test_a_question_without_options_offers_yes_and_no(db: Database, clock: Clock) -> None:
    thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    plain = ApprovalRequest(
        title="Shall I book it?",
        description=None,
        options=YES_NO,
        tool=None,
        approvers=(),
        expires_at=clock.now + timedelta(minutes=5),
    )
    event = await db.approvals.request(thread.id, "run1", ROLE, plain)
    answered = await db.approvals.answer(event, ALICE, "yes", channel="web")
    assert answered.option is not None and answered.option.label == "Yes"
    assert [a[0].id for a in await db.approvals.asked_since("run1", thread.id, 0)] == [event.id]
    assert await db.approvals.asked_since("run1", thread.id, event.seq) == []


async def test_the_waiter_expires_its_approval_at_its_time_and_cancels_it_when_stopped(
    db: Database, clock: Clock
) -> None:
    thread_id, event = await asked(db, clock, minutes=1)
    waiter = asyncio.create_task(wait_for_answer(db, event))
    await asyncio.sleep(0)
    assert not waiter.done()
    waiter.cancel()  # the turn was cancelled while it waited
    with pytest.raises(asyncio.CancelledError):
        await waiter
    _, resolution = await db.approvals.get(event.id)
    assert resolution is not None and resolution.outcome is Outcome.CANCELLED

    _, due = await asked(db, clock, minutes=0)
    async with asyncio.timeout(10):
        expired = await wait_for_answer(db, due)
    assert expired.outcome is Outcome.EXPIRED and expired.target == due.id
    assert [a.id for a, _ in await db.approvals.of_thread(thread_id, pending=True)] == []


async def test_a_question_asked_while_someone_was_removed_is_not_theirs_to_answer(
    db: Database, clock: Clock
) -> None:
    thread, _ = await db.threads.resolve(ParticipantSet.of([ALICE, BOB, ROLE]))
    await db.threads.set_participant_state(thread.id, BOB, ParticipantState.REMOVED)
    event = await db.approvals.request(thread.id, "run1", ROLE, restart_request(now=clock.now))
    await db.threads.set_participant_state(thread.id, BOB, ParticipantState.ACTIVE)
    with pytest.raises(NotFound):
        await db.approvals.answer(event, BOB, "allow", channel="web")
    assert (await db.approvals.answer(event, ALICE, "allow", channel="web")).by == ALICE


async def test_the_sweep_expires_what_nobody_waits_for_and_leaves_the_rest(
    db: Database, clock: Clock
) -> None:
    thread_id, soon = await asked(db, clock, minutes=1)
    _, later = await asked(db, clock, minutes=5)
    _, answered = await asked(db, clock, minutes=1)
    await db.approvals.answer(answered, ALICE, "allow", channel="web")
    assert await expire_approvals(db) == 0
    clock.now += timedelta(minutes=2)
    assert await expire_approvals(db, batch=1) == 1
    _, resolution = await db.approvals.get(soon.id)
    assert resolution is not None and resolution.outcome is Outcome.EXPIRED
    assert [r.id for r, _ in await db.approvals.of_thread(thread_id, pending=True)] == [later.id]
    _, still = await db.approvals.get(answered.id)
    assert still is not None and still.outcome is Outcome.ANSWERED


async def test_an_answer_after_the_expiry_records_the_expiry(db: Database, clock: Clock) -> None:
    _, event = await asked(db, clock, minutes=1)
    clock.now += timedelta(minutes=1)
    with pytest.raises(ApprovalClosed, match="expired"):
        await db.approvals.answer(event, ALICE, "allow", channel="web")
    _, resolution = await db.approvals.get(event.id)
    assert resolution is not None and resolution.outcome is Outcome.EXPIRED


async def test_to_someone_removed_when_it_was_answered_an_approval_is_pending_alike_in_every_list(
    db: Database, clock: Clock
) -> None:
    thread_id, event = await asked(db, clock)
    await db.threads.set_participant_state(thread_id, BOB, ParticipantState.REMOVED)
    await db.approvals.answer(event, ALICE, "allow", channel="web")
    await db.threads.set_participant_state(thread_id, BOB, ParticipantState.ACTIVE)
    as_bob_all = await db.approvals.of_thread(thread_id, viewer=BOB)
    as_bob_pending = await db.approvals.of_thread(thread_id, viewer=BOB, pending=True)
    assert as_bob_all == as_bob_pending == [(event, None)]
    assert await db.approvals.of_thread(thread_id, viewer=ALICE, pending=True) == []
    assert (await db.approvals.get(event.id, viewer=BOB))[1] is None
    assert (await db.approvals.get(event.id, viewer=ALICE))[1] is not None
    assert await db.approvals.resolutions(thread_id, [event.id], BOB) == {}
    assert list(await db.approvals.resolutions(thread_id, [event.id], ALICE)) == [event.id]
