"""The storage contract: every backend of ThreadRepository behaves the same (SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from core.model.errors import Conflict, NotAllowed, NotFound
from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address, ParticipantSet, parse_address
from core.model.timeline import EventId, Message, MessageContext, Retraction, StateChange, ThreadId
from core.model.visibility import visible_to
from core.storage.database import Database, open_database

ALICE = parse_address("person:alice")
BOB = parse_address("person:bob")
ROLE = parse_address("role:concierge")
ACTIVE, REMOVED = ParticipantState.ACTIVE, ParticipantState.REMOVED


def pair(*addresses: str) -> ParticipantSet:
    return ParticipantSet.of(addresses)


async def test_resolving_a_set_in_any_order_gives_one_thread(database: Database) -> None:
    first, created = await database.threads.resolve(pair("person:alice", "role:concierge"))
    again, created_again = await database.threads.resolve(
        pair("role:concierge", "Person:Alice", "person:alice")
    )
    assert created and not created_again
    assert again.id == first.id
    assert first.states == {ALICE: ACTIVE, ROLE: ACTIVE}
    assert first.memory_policy == MemoryPolicy(thread_only=True)


async def test_different_sets_are_different_threads(database: Database) -> None:
    one, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    group, _ = await database.threads.resolve(pair("person:alice", "person:bob", "role:concierge"))
    assert one.id != group.id


async def test_concurrent_first_resolutions_of_one_set_make_one_thread(
    database: Database,
) -> None:
    results = await asyncio.gather(
        *(database.threads.resolve(pair("person:carol", "role:ops")) for _ in range(20))
    )
    assert len({thread.id for thread, _ in results}) == 1
    assert sum(created for _, created in results) == 1


async def test_concurrent_resolutions_from_two_processes_make_one_thread(
    database_url: str,
) -> None:
    """Two independent writers (as two replicas would be) race to create the same set."""
    one = await open_database(database_url)
    two = await open_database(database_url)
    try:
        sets = [pair(f"person:p{i}", "role:ops") for i in range(15)]
        results = await asyncio.gather(
            *(db.threads.resolve(s) for s in sets for db in (one, two, one, two))
        )
        by_set: dict[tuple[Address, ...], set[ThreadId]] = {}
        for (thread, _), s in zip(results, [s for s in sets for _ in range(4)], strict=True):
            by_set.setdefault(s.members, set()).add(thread.id)
        assert all(len(ids) == 1 for ids in by_set.values())
        assert sum(created for _, created in results) == len(sets)
    finally:
        await one.close()
        await two.close()


async def test_an_unknown_thread_is_not_found_and_not_created(database: Database) -> None:
    with pytest.raises(NotFound) as caught:
        await database.threads.get(ThreadId("nope"))
    assert caught.value.code == "thread_not_found"
    with pytest.raises(NotFound):
        await database.threads.post_message(ThreadId("nope"), ALICE, "hello")
    assert (await database.threads.list_for(ALICE)).threads == []


async def test_seq_has_no_gaps_and_positions_increase(database: Database) -> None:
    a, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    b, _ = await database.threads.resolve(pair("person:bob", "role:concierge"))
    posts = [
        database.threads.post_message(thread.id, author, f"m{i}")
        for i in range(30)
        for thread, author in ((a, ALICE), (b, BOB))
    ]
    events = await asyncio.gather(*posts)
    for thread in (a, b):
        seqs = sorted(e.seq for e in events if e.thread_id == thread.id)
        assert seqs == list(range(1, 31))
    positions = [e.position for e in events]
    assert sorted(positions) == list(range(1, 61))
    assert await database.threads.head() == 60


async def test_a_refused_write_leaves_no_gap(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    results = await asyncio.gather(
        database.threads.post_message(thread.id, ALICE, "one"),
        database.threads.post_message(thread.id, BOB, "not a member"),
        database.threads.post_message(thread.id, ALICE, "two"),
        return_exceptions=True,
    )
    assert isinstance(results[1], NotAllowed)
    assert [r.seq for r in results if isinstance(r, Message)] == [1, 2]
    page = await database.threads.timeline(thread.id)
    assert [e.seq for e in page.events] == [1, 2]


async def test_message_fields_round_trip(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    context = MessageContext(kind="task-update", task="T-1", originating_message="m-1")
    sent = await database.threads.post_message(thread.id, ROLE, "done ✓", context)
    page = await database.threads.timeline(thread.id)
    assert page.events == [sent]
    stored = page.events[0]
    assert isinstance(stored, Message)
    assert stored.context == context and stored.text == "done ✓" and stored.author == ROLE
    assert stored.at.tzinfo is not None


async def test_events_at_never_go_backwards_within_a_thread(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    for i in range(20):
        await database.threads.post_message(thread.id, ALICE, f"m{i}")
    events = (await database.threads.timeline(thread.id)).events
    assert all(x.key < y.key for x, y in itertools.pairwise(events))


async def test_removed_participant_cannot_post_until_readded(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    change = await database.threads.set_participant_state(thread.id, ALICE, REMOVED)
    assert (change.participant, change.from_state, change.to_state) == (ALICE, ACTIVE, REMOVED)
    with pytest.raises(NotAllowed) as caught:
        await database.threads.post_message(thread.id, ALICE, "let me in")
    assert caught.value.code == "participant_removed"
    assert (await database.threads.get(thread.id)).states[ALICE] is REMOVED
    await database.threads.set_participant_state(thread.id, ALICE, ACTIVE)
    await database.threads.post_message(thread.id, ALICE, "back")


async def test_state_changes_that_are_not_moves_are_conflicts(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    with pytest.raises(Conflict) as never:
        await database.threads.set_participant_state(thread.id, BOB, ACTIVE)
    assert never.value.code == "never_a_member"
    with pytest.raises(Conflict) as noop:
        await database.threads.set_participant_state(thread.id, ALICE, ACTIVE)
    assert noop.value.code == "illegal_state_change"
    assert (await database.threads.timeline(thread.id)).events == []


async def test_filtered_timeline_hides_the_blackout_even_after_readd(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "person:bob", "role:concierge"))
    t = database.threads
    seen_before = await t.post_message(thread.id, ROLE, "before")
    removal = await t.set_participant_state(thread.id, ALICE, REMOVED)
    hidden = await t.post_message(thread.id, ROLE, "during")
    await t.set_participant_state(thread.id, BOB, REMOVED)  # others' change in the blackout
    readd = await t.set_participant_state(thread.id, ALICE, ACTIVE)
    after = await t.post_message(thread.id, ROLE, "after")

    page = await t.timeline(thread.id, viewer=ALICE)
    assert [e.id for e in page.events] == [seen_before.id, removal.id, readd.id, after.id]
    assert hidden.id not in {e.id for e in page.events}
    assert page.next == after.seq and page.more is False
    operator = await t.timeline(thread.id)
    assert len(operator.events) == 6


async def test_a_non_member_viewer_is_refused(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    with pytest.raises(NotAllowed) as caught:
        await database.threads.timeline(thread.id, viewer=BOB)
    assert caught.value.code == "not_a_member"


async def test_paging_forward_and_backward_agree_with_the_pure_filter(
    database: Database,
) -> None:
    """Storage's range reads give exactly what core.model.visibility gives over the whole
    timeline."""
    thread, _ = await database.threads.resolve(pair("person:alice", "person:bob", "role:concierge"))
    t = database.threads
    for cycle in range(4):
        for i in range(5):
            await t.post_message(thread.id, ROLE, f"c{cycle} m{i}")
        await t.set_participant_state(thread.id, ALICE, REMOVED)
        for i in range(3):
            await t.post_message(thread.id, BOB, f"c{cycle} hidden {i}")
        await t.set_participant_state(thread.id, ALICE, ACTIVE)
    await t.set_participant_state(thread.id, ALICE, REMOVED)
    await t.post_message(thread.id, BOB, "still hidden")

    everything = (await t.timeline(thread.id, limit=500)).events
    expected = [e.id for e in visible_to(ALICE, everything, thread.addresses)]

    forward: list[EventId] = []
    after = 0
    while True:
        page = await t.timeline(thread.id, viewer=ALICE, after=after, limit=4)
        forward += [e.id for e in page.events]
        after = page.next or after
        if not page.more:
            break
    assert forward == expected

    backward: list[EventId] = []
    before: int | None = None
    while True:
        page = await t.latest(thread.id, viewer=ALICE, before=before, limit=3)
        backward = [e.id for e in page.events] + backward
        if page.next is None:
            break
        before = page.next
    assert backward == expected


async def test_retraction_by_the_author_once(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    message = await database.threads.post_message(thread.id, ROLE, "wrong answer")
    with pytest.raises(NotAllowed) as not_author:
        await database.threads.retract(thread.id, message.id, ALICE, None)
    assert not_author.value.code == "not_the_author"
    retraction = await database.threads.retract(thread.id, message.id, ROLE, "mistake")
    assert isinstance(retraction, Retraction) and retraction.target == message.id
    assert retraction.reason == "mistake"
    with pytest.raises(Conflict) as twice:
        await database.threads.retract(thread.id, message.id, ROLE, None)
    assert twice.value.code == "already_retracted"
    events = (await database.threads.timeline(thread.id)).events
    original = events[0]
    assert isinstance(original, Message) and original.retracted and original.text == "wrong answer"


async def test_concurrent_retractions_of_one_message_succeed_once(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    message = await database.threads.post_message(thread.id, ROLE, "oops")
    results = await asyncio.gather(
        *(database.threads.retract(thread.id, message.id, ROLE, None) for _ in range(5)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, Retraction) for r in results) == 1
    assert all(isinstance(r, Conflict) for r in results if not isinstance(r, Retraction))


async def test_retracting_something_that_is_not_a_message(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    change = await database.threads.set_participant_state(thread.id, ALICE, REMOVED)
    with pytest.raises(NotFound) as caught:
        await database.threads.retract(thread.id, change.id, ALICE, None)
    assert caught.value.code == "message_not_found"
    with pytest.raises(NotFound):
        await database.threads.retract(thread.id, EventId("missing"), ALICE, None)


async def test_memory_policy_changes(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    updated = await database.threads.set_memory_policy(thread.id, MemoryPolicy(thread_only=False))
    assert updated.memory_policy.thread_only is False
    assert (await database.threads.get(thread.id)).memory_policy.thread_only is False


async def test_list_for_a_participant(database: Database) -> None:
    one, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    two, _ = await database.threads.resolve(pair("person:alice", "role:ops"))
    await database.threads.resolve(pair("person:bob", "role:ops"))
    page = await database.threads.list_for(ALICE)
    assert [t.id for t in page.threads] == [one.id, two.id]
    assert page.next is None
    assert page.threads[0].states == {ALICE: ACTIVE, ROLE: ACTIVE}


async def test_listing_pages_through_every_thread_in_creation_order(database: Database) -> None:
    created = [
        (await database.threads.resolve(pair("person:alice", f"role:r{i}")))[0].id for i in range(7)
    ]
    seen: list[ThreadId] = []
    after: ThreadId | None = None
    while True:
        page = await database.threads.list_for(ALICE, after=after, limit=3)
        seen += [t.id for t in page.threads]
        if page.next is None:
            break
        after = page.next
    assert seen == created


async def test_events_since_resumes_from_any_position(database: Database) -> None:
    a, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    b, _ = await database.threads.resolve(pair("person:bob", "role:concierge"))
    for i in range(7):
        await database.threads.post_message(a.id, ALICE, f"a{i}")
        await database.threads.post_message(b.id, BOB, f"b{i}")
    seen: list[int] = []
    cursor = 0
    while True:
        page = await database.threads.events_since(cursor, limit=5)
        if not page.events:
            break
        seen += [e.position for e in page.events]
        cursor = page.next
    assert seen == list(range(1, 15))
    assert (await database.threads.events_since(cursor)).next == cursor


async def test_a_reader_resuming_from_positions_never_misses_an_event(
    database: Database,
) -> None:
    """While writers commit concurrently, a reader that only ever moves its cursor forward
    collects every event exactly once: positions are handed out in commit order."""
    threads = [
        (await database.threads.resolve(pair(f"person:w{i}", "role:concierge")))[0]
        for i in range(4)
    ]
    total = 120
    collected: list[int] = []

    async def write() -> None:
        await asyncio.gather(
            *(
                database.threads.post_message(
                    threads[i % 4].id, parse_address(f"person:w{i % 4}"), f"m{i}"
                )
                for i in range(total)
            )
        )

    async def read() -> None:
        cursor = 0
        while len(collected) < total:
            async with asyncio.timeout(10):
                await database.bus.wait_beyond(cursor)
            page = await database.threads.events_since(cursor)
            collected.extend(e.position for e in page.events)
            cursor = page.next

    await asyncio.gather(write(), read())
    assert collected == list(range(1, total + 1))


async def test_the_bus_is_nudged_after_commit(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    start = database.bus.head
    waiter = asyncio.create_task(database.bus.wait_beyond(start))
    await asyncio.sleep(0)
    assert not waiter.done()
    message = await database.threads.post_message(thread.id, ALICE, "hi")
    async with asyncio.timeout(5):
        assert await waiter == message.position


async def test_state_change_events_read_back(database: Database) -> None:
    thread, _ = await database.threads.resolve(pair("person:alice", "role:concierge"))
    await database.threads.set_participant_state(thread.id, ALICE, REMOVED)
    (event,) = (await database.threads.timeline(thread.id)).events
    assert isinstance(event, StateChange)
    assert (event.participant, event.from_state, event.to_state) == (ALICE, ACTIVE, REMOVED)
