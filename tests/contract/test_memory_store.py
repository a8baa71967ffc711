"""Agent memory on every backend: what a thread may recall, full-text queries, field filters —
and a property test of storage against the reference rules in `core.memory`."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.membership import ParticipantState
from core.memory import MemoryEntry, Recall, matches, parse_recall, recallable_in
from core.memory_policy import MemoryPolicy
from core.participants import Address, ParticipantSet
from core.storage.database import Database, open_database
from core.timeline import ThreadId

ROLE = "concierge"
EVERYTHING = parse_recall("", limit=100)


async def _thread(db: Database, person: str) -> ThreadId:
    thread, _ = await db.threads.resolve(ParticipantSet.of([person, f"role:{ROLE}"]))
    return thread.id


def _texts(entries: list[MemoryEntry]) -> list[str]:
    return [str(e.payload.get("text")) for e in entries]


async def test_a_threads_private_entries_are_not_recalled_in_another_thread(database):
    alice, bob = await _thread(database, "person:alice"), await _thread(database, "person:bob")
    await database.memory.store(ROLE, {"text": "alice likes tea"}, thread_id=alice)

    in_alice = await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)
    in_bob = await database.memory.recall(ROLE, EVERYTHING, thread_id=bob)
    assert _texts(in_alice) == ["alice likes tea"]
    assert in_alice[0].thread_id == alice and in_alice[0].thread_only is True
    assert in_bob == []


async def test_entries_stored_under_a_shared_policy_are_recalled_everywhere(database):
    alice, bob = await _thread(database, "person:alice"), await _thread(database, "person:bob")
    await database.threads.set_memory_policy(alice, MemoryPolicy(thread_only=False))
    await database.memory.store(ROLE, {"text": "the office closes at six"}, thread_id=alice)

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=bob)) == [
        "the office closes at six"
    ]


async def test_a_policy_change_affects_only_later_entries(database):
    alice, bob = await _thread(database, "person:alice"), await _thread(database, "person:bob")
    await database.memory.store(ROLE, {"text": "before"}, thread_id=alice)
    await database.threads.set_memory_policy(alice, MemoryPolicy(thread_only=False))
    await database.memory.store(ROLE, {"text": "after"}, thread_id=alice)
    await database.threads.set_memory_policy(alice, MemoryPolicy(thread_only=True))

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=bob)) == ["after"]
    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)) == [
        "after",
        "before",
    ]


async def test_entries_of_no_thread_are_recalled_everywhere_and_roles_do_not_mix(database):
    alice = await _thread(database, "person:alice")
    await database.memory.store(ROLE, {"text": "house rules"}, thread_id=None)
    await database.memory.store("other", {"text": "not yours"}, thread_id=None)

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)) == [
        "house rules"
    ]
    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=None)) == ["house rules"]


async def test_entries_stay_recallable_after_a_participant_is_removed_and_readded(database):
    alice = await _thread(database, "person:alice")
    await database.memory.store(ROLE, {"text": "kept"}, thread_id=alice)
    person = Address("person:alice")
    await database.threads.set_participant_state(alice, person, ParticipantState.REMOVED)
    await database.threads.set_participant_state(alice, person, ParticipantState.ACTIVE)

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)) == ["kept"]


async def test_a_query_matches_every_word_in_the_payload_newest_first(database):
    alice = await _thread(database, "person:alice")
    for text in ("blue door on the left", "red door", "Blue car", "the door is blue"):
        await database.memory.store(ROLE, {"text": text, "kind": "note"}, thread_id=alice)

    found = await database.memory.recall(ROLE, parse_recall("BLUE door"), thread_id=alice)
    assert _texts(found) == ["the door is blue", "blue door on the left"]
    one = await database.memory.recall(ROLE, parse_recall("door", limit=1), thread_id=alice)
    assert _texts(one) == ["the door is blue"]
    keys = await database.memory.recall(ROLE, parse_recall("kind note car"), thread_id=alice)
    assert _texts(keys) == ["Blue car"]  # keys and values are both words of a payload
    assert await database.memory.recall(ROLE, parse_recall("green"), thread_id=alice) == []


async def test_field_filters_compare_values_and_their_types(database):
    alice = await _thread(database, "person:alice")
    payloads = [
        {"text": "a", "kind": "todo", "done": False, "priority": 1},
        {"text": "b", "kind": "todo", "done": True, "priority": 2},
        {"text": "c", "kind": "note", "done": None, "priority": "1"},
    ]
    for payload in payloads:
        await database.memory.store(ROLE, payload, thread_id=alice)

    async def texts(**where: object) -> list[str]:
        found = await database.memory.recall(ROLE, parse_recall(where=where), thread_id=alice)
        return sorted(_texts(found))

    assert await texts(kind="todo") == ["a", "b"]
    assert await texts(kind="todo", done=False) == ["a"]
    assert await texts(done=None) == ["c"]
    assert await texts(priority=1) == ["a"]  # the number, not the string "1"
    assert await texts(priority="1") == ["c"]
    assert await texts(missing="x") == []


# --- storage against the reference rules ---------------------------------------------------

WORDS = ["tea", "door", "blue", "six", "note"]
payloads = st.fixed_dictionaries(
    {"text": st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)},
    optional={"kind": st.sampled_from(["todo", "note"])},
)
plans = st.lists(
    st.tuples(st.sampled_from([0, 1, 2, None]), st.booleans(), payloads), min_size=1, max_size=12
)
queries = st.tuples(
    st.lists(st.sampled_from(WORDS), max_size=2),
    st.sampled_from([None, {"kind": "todo"}, {"kind": "note"}]),
    st.sampled_from([0, 1, 2, None]),
)
_roles = itertools.count()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=plans, query=queries)
def test_recall_returns_exactly_what_the_rules_allow(database_url, plan, query):
    """Each example: threads with random policies, entries stored in random threads (or none),
    one recall from one of the threads (or none) — compared with `recallable_in` and `matches`
    over everything stored, newest first."""
    role = f"prop{next(_roles)}"

    async def example() -> tuple[list[MemoryEntry], list[MemoryEntry]]:
        db = await open_database(database_url)
        try:
            threads = [
                (
                    await db.threads.resolve(
                        ParticipantSet.of([f"person:{role}-{i}", f"role:{role}"])
                    )
                )[0].id
                for i in range(3)
            ]
            stored = []
            for where, shared, payload in plan:
                thread_id = threads[where] if where is not None else None
                if thread_id is not None:
                    policy = MemoryPolicy(thread_only=not shared)
                    await db.threads.set_memory_policy(thread_id, policy)
                stored.append(await db.memory.store(role, payload, thread_id=thread_id))
            words, filters, reader = query
            recall = Recall(words=tuple(words), where=filters, limit=100)
            thread_id = threads[reader] if reader is not None else None
            found = await db.memory.recall(role, recall, thread_id=thread_id)
            expected = [
                e for e in reversed(stored) if recallable_in(e, thread_id) and matches(e, recall)
            ]
            return found, expected
        finally:
            await db.close()

    found, expected = asyncio.run(example())
    assert [e.id for e in found] == [e.id for e in expected]


def test_recall_arguments_are_checked():
    from core.errors import InvalidInput

    for bad in ({"limit": 0}, {"limit": 101}, {"limit": True}, {"where": {"a.b": 1}},
                {"where": {"a": [1]}}, {"query": 5}):  # fmt: skip
        with pytest.raises(InvalidInput):
            parse_recall(**bad)
