"""Agent memory on every backend: what a thread may recall, full-text queries, field filters —
and a property test of storage against the reference rules in `core.model.memory`."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.model.membership import ParticipantState
from core.model.memory import MemoryEntry, Recall, matches, parse_recall, recallable_in
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address, ParticipantSet
from core.model.timeline import ThreadId
from core.storage.database import Database, open_database
from tests.old_memory import insert_raw, old_payloads

ROLE = "concierge"
EVERYTHING = parse_recall("", limit=100)


async def _thread(db: Database, person: str) -> ThreadId:
    thread, _ = await db.threads.resolve(ParticipantSet.of([person, f"role:{ROLE}"]))
    return thread.id


def _texts(entries: list[MemoryEntry]) -> list[str]:
    return [str(e.payload.get("text")) for e in entries]


async def test_a_threads_private_entries_are_not_recalled_in_another_thread(
    database: Database,
) -> None:
    alice, bob = await _thread(database, "person:alice"), await _thread(database, "person:bob")
    await database.memory.store(ROLE, {"text": "alice likes tea"}, thread_id=alice)

    in_alice = await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)
    in_bob = await database.memory.recall(ROLE, EVERYTHING, thread_id=bob)
    assert _texts(in_alice) == ["alice likes tea"]
    assert in_alice[0].thread_id == alice and in_alice[0].thread_only is True
    assert in_bob == []


async def test_entries_stored_under_a_shared_policy_are_recalled_everywhere(
    database: Database,
) -> None:
    alice, bob = await _thread(database, "person:alice"), await _thread(database, "person:bob")
    await database.threads.set_memory_policy(alice, MemoryPolicy(thread_only=False))
    await database.memory.store(ROLE, {"text": "the office closes at six"}, thread_id=alice)

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=bob)) == [
        "the office closes at six"
    ]


async def test_a_policy_change_affects_only_later_entries(database: Database) -> None:
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


async def test_entries_of_no_thread_are_recalled_everywhere_and_roles_do_not_mix(
    database: Database,
) -> None:
    alice = await _thread(database, "person:alice")
    await database.memory.store(ROLE, {"text": "house rules"}, thread_id=None)
    await database.memory.store("other", {"text": "not yours"}, thread_id=None)

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)) == [
        "house rules"
    ]
    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=None)) == ["house rules"]


async def test_entries_stay_recallable_after_a_participant_is_removed_and_readded(
    database: Database,
) -> None:
    alice = await _thread(database, "person:alice")
    await database.memory.store(ROLE, {"text": "kept"}, thread_id=alice)
    person = Address("person:alice")
    await database.threads.set_participant_state(alice, person, ParticipantState.REMOVED)
    await database.threads.set_participant_state(alice, person, ParticipantState.ACTIVE)

    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=alice)) == ["kept"]


async def test_a_query_matches_every_word_in_the_payload_newest_first(database: Database) -> None:
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


async def test_field_filters_compare_values_and_their_types(database: Database) -> None:
    alice = await _thread(database, "person:alice")
    payloads: list[dict[str, object]] = [
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
    st.tuples(st.sampled_from([0, 1, 2, None]), st.booleans(), payloads, st.booleans()),
    min_size=1,
    max_size=12,
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
def test_recall_returns_exactly_what_the_rules_allow(
    database_url: str,
    plan: list[tuple[int | None, bool, dict[str, str], bool]],
    query: tuple[list[str], dict[str, str] | None, int | None],
) -> None:
    """Each example: threads with random policies, entries stored in random threads (or none),
    some of them redacted, one recall from one of the threads (or none) — compared with
    `recallable_in` and `matches` over everything stored, newest first."""
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
            for where, shared, payload, redacted in plan:
                thread_id = threads[where] if where is not None else None
                if thread_id is not None:
                    policy = MemoryPolicy(thread_only=not shared)
                    await db.threads.set_memory_policy(thread_id, policy)
                entry = await db.memory.store(role, payload, thread_id=thread_id)
                if redacted:
                    entry = await db.memory.redact(role, entry.id, by="operator", reason=None)
                stored.append(entry)
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


def test_recall_arguments_are_checked() -> None:
    from core.model.errors import InvalidInput

    for bad in ({"limit": 0}, {"limit": 101}, {"limit": True}, {"where": {"a.b": 1}},
                {"where": {"a": [1]}}, {"query": 5}, {"query": "tea\x00"},
                {"where": {"a": float("inf")}}, {"where": {"a": 2**63}},
                {"where": {"a": "\ud800"}}):  # fmt: skip
        with pytest.raises(InvalidInput):
            parse_recall(**bad)


# --- memory that cannot be poisoned ----------------------------------------------------------

BAD_VALUES = [
    (float("inf"), "invalid_number"),
    (float("nan"), "invalid_number"),
    (2**63, "invalid_number"),
    ("a\x00b", "nul_character"),
    ("\ud800", "invalid_unicode"),
]


@pytest.mark.parametrize(("value", "code"), BAD_VALUES)
async def test_storing_refuses_what_core_values_refuses_whoever_calls(
    database: Database, value: object, code: str
) -> None:
    """The repository itself checks, so the tools and any in-process caller cannot store what
    storage could not read back; nothing is stored."""
    from core.model.errors import InvalidInput

    alice = await _thread(database, "person:alice")
    for payload in ({"kind": "note", "x": value}, {"kind": "note", "deep": [{"x": value}]}):
        with pytest.raises(InvalidInput) as refused:
            await database.memory.store(ROLE, payload, thread_id=alice)
        assert refused.value.code == code
        assert "payload." in refused.value.message  # names the field
    with pytest.raises(InvalidInput):
        await database.memory.store(ROLE, {"a\x00": 1}, thread_id=alice)
    assert await database.memory.recall(ROLE, EVERYTHING, thread_id=alice) == []


async def _upgrade_to(url: str, revision: str) -> None:
    from alembic import command

    from core.storage.engine import create_engine
    from core.storage.migrate import _config

    engine = create_engine(url, pool_size=1, writer=True)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(_config(c), revision))
    finally:
        await engine.dispose()


@pytest.fixture
async def old_database_url(database_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database of the same backend as `database_url`, at revision 0015 (before
    memory was guarded); a PostgreSQL one is dropped afterwards."""
    import uuid

    from tests.conftest import _admin

    if database_url.startswith("sqlite"):
        url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
        await _upgrade_to(url, "0015")
        yield url
        return
    name = f"rolecall_old_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        url = f"{database_url.rsplit('/', 1)[0]}/{name}"
        await _upgrade_to(url, "0015")
        yield url
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _acceptable(entry: MemoryEntry) -> bool:
    from core.model.values import check_value

    check_value(dict(entry.payload), "payload")  # raises when not
    return True


async def test_entries_older_versions_stored_are_read_safely_after_the_upgrade(
    old_database_url: str,
) -> None:
    """Before 0016, a `where` recall that could see such an entry failed. After the upgrade,
    every recall answers; every payload read is acceptable, those mended on reading say so; on
    PostgreSQL (mended into `jsonb`) they match filters again, on SQLite only the payloads that
    are not JSON (`Infinity`, `NaN`) stay out of filtered recalls."""
    dialect = "sqlite" if old_database_url.startswith("sqlite") else "postgresql"
    payloads = old_payloads(dialect)
    await insert_raw(old_database_url, payloads, role=ROLE, column="json")
    await _upgrade_to(old_database_url, "head")

    db = await open_database(old_database_url)
    try:
        everything = await db.memory.recall(ROLE, EVERYTHING, thread_id=None)
        notes = await db.memory.recall(ROLE, parse_recall(where={"kind": "note"}), thread_id=None)
        found = await db.memory.recall(ROLE, parse_recall("good tea"), thread_id=None)
    finally:
        await db.close()
    by_text = {str(e.payload["text"]): e for e in everything}
    assert set(by_text) == set(payloads)
    assert all(_acceptable(e) for e in everything)
    # Read-time mending is flagged; PostgreSQL's NUL and surrogates were mended by 0016 already.
    mended_on_read = set(payloads) - {"good"} if dialect == "sqlite" else {"huge"}
    assert {t for t, e in by_text.items() if e.cleaned} == mended_on_read
    assert by_text["good"].payload == payloads["good"]
    assert by_text["huge"].payload["x"] is None
    assert by_text["nul"].payload["x"] == "ab"
    assert by_text["surrogate"].payload["x"] == "a\ufffdb"
    if dialect == "sqlite":
        assert by_text["infinite"].payload["x"] is None
        assert by_text["nan"].payload == {"kind": "note", "text": "nan", "x": None, "y": None}
        assert sorted(_texts(notes)) == ["good", "huge", "nul", "surrogate"]
    else:
        assert sorted(_texts(notes)) == sorted(payloads)
    assert _texts(found) == ["good"]


async def test_raw_rows_in_the_current_schema_never_fail_a_recall(
    database_url: str, database: Database
) -> None:
    """What a raw write can still put in today's schema: on SQLite anything (so recall guards
    its filters and mends on reading); on PostgreSQL `jsonb` refuses NUL and lone surrogates
    itself, and keeps numbers beyond 64 bits, which are read as null."""
    from sqlalchemy.exc import DBAPIError

    sqlite = database_url.startswith("sqlite")
    alice = await _thread(database, "person:alice")
    await database.threads.set_memory_policy(alice, MemoryPolicy(thread_only=False))
    await database.memory.store(ROLE, {"kind": "note", "text": "fine"}, thread_id=alice)
    if sqlite:
        poison = old_payloads("sqlite")
    else:
        poison = {"huge": {"kind": "note", "text": "huge", "x": 10**400}}
        for refused in ("nul", "surrogate"):
            with pytest.raises(DBAPIError):
                await insert_raw(database_url, {refused: old_payloads("pg")[refused]}, role=ROLE)
    await insert_raw(database_url, poison, role=ROLE)

    for thread_id in (alice, None):
        for recall in (EVERYTHING, parse_recall(where={"kind": "note"}), parse_recall("note")):
            found = await database.memory.recall(ROLE, recall, thread_id=thread_id)
            assert all(_acceptable(e) for e in found)
            assert "fine" in _texts(found)
        notes = parse_recall(where={"kind": "note"}, limit=100)
        filtered = set(_texts(await database.memory.recall(ROLE, notes, thread_id=thread_id)))
        assert filtered >= {"fine", "huge"}
        assert not filtered & {"infinite", "nan"}  # SQLite: not JSON, so no filter matches them


# --- redaction --------------------------------------------------------------------------------


async def test_a_redacted_entry_is_recalled_nowhere_and_listed_as_redacted(
    database: Database,
) -> None:
    alice, bob = await _thread(database, "person:alice"), await _thread(database, "person:bob")
    await database.threads.set_memory_policy(alice, MemoryPolicy(thread_only=False))
    bad = await database.memory.store(ROLE, {"kind": "note", "text": "poison"}, thread_id=alice)
    kept = await database.memory.store(ROLE, {"kind": "note", "text": "kept"}, thread_id=alice)
    everywhere = await database.memory.store(ROLE, {"kind": "note", "text": "rule"}, thread_id=None)

    redacted = await database.memory.redact(ROLE, bad.id, by="operator", reason="it lies")
    assert redacted.id == bad.id and redacted.payload == bad.payload
    assert redacted.redaction is not None
    assert (redacted.redaction.by, redacted.redaction.reason) == ("operator", "it lies")

    queries = [EVERYTHING, parse_recall("poison"), parse_recall(where={"kind": "note"}),
               parse_recall("note", where={"text": "poison"})]  # fmt: skip
    for thread_id in (alice, bob, None):
        for query in queries:
            found = await database.memory.recall(ROLE, query, thread_id=thread_id)
            assert bad.id not in [e.id for e in found]
    assert _texts(await database.memory.recall(ROLE, EVERYTHING, thread_id=bob)) == [
        "rule",
        "kept",
    ]

    listed = await database.memory.list(ROLE, after=None, limit=10)
    assert [e.id for e in listed] == [bad.id, kept.id, everywhere.id]  # oldest first
    assert [e.redaction is not None for e in listed] == [True, False, False]
    assert listed[0].redaction == redacted.redaction
    assert [e.id for e in await database.memory.list(ROLE, after=bad.id, limit=1)] == [kept.id]
    in_alice = await database.memory.list(ROLE, thread_id=alice, after=None, limit=10)
    assert [e.id for e in in_alice] == [bad.id, kept.id]


async def test_redacting_twice_or_an_entry_of_no_such_role_is_refused(database: Database) -> None:
    from core.model.errors import Conflict, NotFound

    entry = await database.memory.store(ROLE, {"text": "once"}, thread_id=None)
    first = await database.memory.redact(ROLE, entry.id, by="operator", reason=None)
    with pytest.raises(Conflict) as twice:
        await database.memory.redact(ROLE, entry.id, by="operator", reason="again")
    assert twice.value.code == "already_redacted"
    listed = await database.memory.list(ROLE, after=None, limit=10)
    assert listed[0].redaction == first.redaction  # the first one stands

    other = await database.memory.store("other", {"text": "theirs"}, thread_id=None)
    for role, entry_id in ((ROLE, other.id), (ROLE, "0" * 32), ("nobody", entry.id)):
        with pytest.raises(NotFound) as missing:
            await database.memory.redact(role, entry_id, by="operator", reason=None)
        assert missing.value.code == "memory_entry_not_found"
    assert await database.memory.has_entries(ROLE) and not await database.memory.has_entries("x")
