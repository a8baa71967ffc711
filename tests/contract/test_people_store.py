"""The people repository on every backend: one person per identity (also under races), unique
slugs, link codes (one-time, expiring), and merges that keep every conversation reachable."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from core.model.errors import Conflict, NotAllowed, NotFound
from core.model.membership import ParticipantState
from core.model.memory import parse_recall
from core.model.participants import Address, ParticipantSet, parse_address
from core.model.people import Identity, PersonChange, parse_identity
from core.model.timeline import AnyEvent, Message, Retraction, StateChange, ThreadId
from core.storage.database import Database, open_database

ROLE = parse_address("role:concierge")
A, B = parse_address("person:a"), parse_address("person:b")
WEB_A = parse_identity("web:example.com:a-1")
WEB_B = parse_identity("web:example.com:b-1")
SLACK_A = parse_identity("slack:t1:UA")
ACTIVE, REMOVED = ParticipantState.ACTIVE, ParticipantState.REMOVED


async def _person_with(db: Database, slug: str, *identities: Identity) -> None:
    await db.people.create(slug=slug, display_name=slug.upper())
    for identity in identities:
        assert (await db.people.add_identity(slug, identity))[1] is True


async def _link(db: Database, slug: str, identity: Identity) -> None:
    code = await db.people.new_link_code(slug, timedelta(minutes=5))
    await db.people.redeem(code.code, identity)


def _said(events: Sequence[AnyEvent]) -> list[str]:
    """The texts of a timeline that holds only messages."""
    assert all(isinstance(e, Message) for e in events), events
    return [e.text for e in events if isinstance(e, Message)]


async def _thread(db: Database, *members: str) -> ThreadId:
    thread, _ = await db.threads.resolve(ParticipantSet.of(members))
    return thread.id


# --- resolving identities -----------------------------------------------------------------------


async def test_resolving_an_identity_twice_gives_one_person(database: Database) -> None:
    first = await database.people.resolve(WEB_A, display_name="Ann Lee", email="ann@example.com")
    again = await database.people.resolve(WEB_A, display_name="Someone Else")
    assert first == again
    assert first.slug == "ann-lee" and first.display_name == "Ann Lee" and first.active
    assert first.email == "ann@example.com"
    assert await database.people.of_identity(WEB_A) == first
    assert await database.people.of_identity(WEB_B) is None
    person, identities = await database.people.profile("ann-lee")
    assert person == first and [str(i.identity) for i in identities] == [str(WEB_A)]


async def test_concurrent_first_contacts_of_one_identity_make_one_person(
    database: Database,
) -> None:
    people = await asyncio.gather(
        *(database.people.resolve(WEB_A, display_name="Ann") for _ in range(20))
    )
    assert len({p.slug for p in people}) == 1
    assert [p.slug for p in await database.people.list()] == ["ann"]


async def test_first_contacts_racing_from_two_processes_make_one_person_per_identity(
    database_url: str,
) -> None:
    """Two independent writers, as two replicas would be, race on the same identities (and, as
    everyone is called Ann, on the same slugs)."""
    one, two = await open_database(database_url), await open_database(database_url)
    try:
        identities = [parse_identity(f"web:example.com:{i}") for i in range(8)]
        found = await asyncio.gather(
            *(
                db.people.resolve(identity, display_name="Ann")
                for identity in identities
                for db in (one, two, two, one)
            )
        )
        by_identity: dict[str, set[str]] = {}
        for person, identity in zip(found, [i for i in identities for _ in range(4)], strict=True):
            by_identity.setdefault(str(identity), set()).add(person.slug)
        assert all(len(slugs) == 1 for slugs in by_identity.values())
        slugs = sorted(s for [s] in map(list, by_identity.values()))
        assert len(set(slugs)) == len(identities)
        assert sorted(p.slug for p in await one.people.list()) == slugs  # no orphans left
    finally:
        await one.close()
        await two.close()


async def test_derived_slugs_skip_people_and_addresses_threads_already_use(
    database: Database,
) -> None:
    await _thread(database, "person:carol", "role:concierge")  # an address with no person yet
    ann = await database.people.resolve(WEB_A, display_name="Ann")
    ann2 = await database.people.resolve(WEB_B, display_name="ANN")
    carol = await database.people.resolve(SLACK_A, display_name="Carol")
    assert (ann.slug, ann2.slug, carol.slug) == ("ann", "ann-2", "carol-2")
    nameless = await database.people.create(display_name="李")
    assert nameless.slug == "person"


async def test_creating_with_a_taken_slug_is_a_conflict(database: Database) -> None:
    await database.people.create(slug="ann", display_name="Ann")
    with pytest.raises(Conflict) as caught:
        await database.people.create(slug="ann", display_name="Another Ann")
    assert caught.value.code == "person_exists"
    # An operator may give a person the address a thread already uses: it is theirs then.
    await _thread(database, "person:dan", "role:concierge")
    assert (await database.people.create(slug="dan", display_name="Dan")).slug == "dan"


async def test_people_are_listed_in_slug_order_and_paged(database: Database) -> None:
    for slug in ("cy", "ab", "bo"):
        await database.people.create(slug=slug, display_name=slug)
    assert [p.slug for p in await database.people.list(limit=2)] == ["ab", "bo"]
    assert [p.slug for p in await database.people.list(after="bo")] == ["cy"]


async def test_an_identity_belongs_to_one_person(database: Database) -> None:
    await _person_with(database, "a", WEB_A)
    await database.people.create(slug="b", display_name="B")
    assert (await database.people.add_identity("a", WEB_A))[1] is False  # already theirs
    with pytest.raises(Conflict) as caught:
        await database.people.add_identity("b", WEB_A)
    assert caught.value.code == "identity_taken"
    with pytest.raises(NotFound) as missing:
        await database.people.add_identity("nobody", WEB_B)
    assert missing.value.code == "person_not_found"
    assert (await database.people.of_identity(WEB_A)).slug == "a"  # type: ignore[union-attr]


async def test_deactivating_and_reactivating(database: Database) -> None:
    await _person_with(database, "a", WEB_A)
    assert (await database.people.deactivate("a")).active is False
    assert await database.people.inactive([A, B, ROLE]) == {A}
    assert (await database.people.resolve(WEB_A, display_name="A")).active is False
    with pytest.raises(Conflict) as caught:
        await database.people.new_link_code("a", timedelta(minutes=1))
    assert caught.value.code == "person_deactivated"
    assert (await database.people.reactivate("a")).active is True
    assert await database.people.inactive([A]) == set()
    changed = await database.people.update("a", PersonChange(display_name="Ay", email=None))
    assert (changed.display_name, changed.email) == ("Ay", None)


# --- link codes ---------------------------------------------------------------------------------


async def test_redeeming_a_code_moves_the_identity_to_the_codes_person(database: Database) -> None:
    await _person_with(database, "a", WEB_A, SLACK_A)
    await _person_with(database, "b", WEB_B)
    code = await database.people.new_link_code("b", timedelta(minutes=5))
    assert code.person == "b" and len(code.code) == 9

    person = await database.people.redeem(code.code.lower(), SLACK_A)
    assert person.slug == "b"
    assert (await database.people.of_identity(SLACK_A)).slug == "b"  # type: ignore[union-attr]
    a, identities = await database.people.profile("a")
    assert a.active and a.merged_into is None  # a keeps their web identity, and stays a
    assert [str(i.identity) for i in identities] == [str(WEB_A)]
    _, of_b = await database.people.profile("b")
    assert sorted(str(i.identity) for i in of_b) == sorted([str(WEB_B), str(SLACK_A)])


async def test_a_code_links_a_new_identity_and_works_once(database: Database) -> None:
    await _person_with(database, "b", WEB_B)
    code = await database.people.new_link_code("b", timedelta(minutes=5))
    assert (await database.people.redeem(code.code, WEB_A)).slug == "b"
    with pytest.raises(NotFound) as caught:
        await database.people.redeem(code.code, SLACK_A)
    assert caught.value.code == "link_code_used"
    assert await database.people.of_identity(SLACK_A) is None
    with pytest.raises(NotFound) as unknown:
        await database.people.redeem("ZZZZ-ZZZZ", SLACK_A)
    assert unknown.value.code == "link_code_unknown"


async def test_two_identities_racing_for_one_code_link_only_one(database: Database) -> None:
    await _person_with(database, "b", WEB_B)
    code = await database.people.new_link_code("b", timedelta(minutes=5))
    results = await asyncio.gather(
        database.people.redeem(code.code, WEB_A),
        database.people.redeem(code.code, SLACK_A),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert [r.code for r in results if isinstance(r, NotFound)] == ["link_code_used"]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_an_expired_code_is_refused_and_changes_nothing(database_url: str) -> None:
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    try:
        await _person_with(db, "a", WEB_A)
        await _person_with(db, "b", WEB_B)
        code = await db.people.new_link_code("b", timedelta(seconds=60))
        assert code.expires_at == clock.now + timedelta(seconds=60)
        clock.now += timedelta(seconds=60)
        with pytest.raises(NotFound) as caught:
            await db.people.redeem(code.code, WEB_A)
        assert caught.value.code == "link_code_expired"
        assert (await db.people.of_identity(WEB_A)).slug == "a"  # type: ignore[union-attr]
        fresh = await db.people.new_link_code("b", timedelta(seconds=60))
        clock.now += timedelta(seconds=59)
        assert (await db.people.redeem(fresh.code, WEB_A)).slug == "b"
    finally:
        await db.close()


async def test_codes_of_and_identities_from_people_who_cannot_link_are_refused(
    database: Database,
) -> None:
    await _person_with(database, "a", WEB_A)
    await _person_with(database, "b", WEB_B)
    code = await database.people.new_link_code("b", timedelta(minutes=5))
    await database.people.deactivate("a")
    with pytest.raises(Conflict) as owner_off:
        await database.people.redeem(code.code, WEB_A)  # a's identity stays with a
    assert owner_off.value.code == "person_deactivated"
    await database.people.deactivate("b")
    with pytest.raises(Conflict) as target_off:
        await database.people.redeem(code.code, SLACK_A)
    assert target_off.value.code == "person_deactivated"
    await database.people.reactivate("b")
    assert (await database.people.redeem(code.code, SLACK_A)).slug == "b"  # refusals used nothing


# --- merges -------------------------------------------------------------------------------------


async def test_a_merge_re_addresses_the_conversation_and_keeps_everything_said(
    database: Database,
) -> None:
    await _person_with(database, "a", WEB_A)
    await _person_with(database, "b", WEB_B)
    threads, db = database.threads, database
    thread = await _thread(db, "person:a", "role:concierge")
    hello = await threads.post_message(thread, A, "hello, I am on the web")
    await threads.post_message(thread, ROLE, "hello a")
    await threads.set_participant_state(thread, A, REMOVED)
    await threads.post_message(thread, ROLE, "said while a was away")
    await threads.set_participant_state(thread, A, ACTIVE)
    await threads.retract(thread, hello.id, A, "typo")
    run, _ = await db.runs.ensure_conversation_run(thread, "concierge")
    await db.memory.store("concierge", {"text": "a likes tea"}, thread_id=thread)
    before = (await threads.timeline(thread)).events

    await _link(db, "b", WEB_A)  # web:…:a-1 was a's only identity: a is merged into b

    merged = await db.people.get("a")
    assert (merged.active, merged.merged_into, merged.state) == (False, "b", "merged")
    assert (await db.people.resolve(WEB_A, display_name="A")).slug == "b"
    assert await db.people.inactive([A, B]) == {A}
    again, created = await threads.resolve(ParticipantSet.of(["person:b", "role:concierge"]))
    assert (again.id, created) == (thread, False)
    assert again.states == {B: ACTIVE, ROLE: ACTIVE}
    assert (await threads.list_for(A)).threads == []
    assert [t.id for t in (await threads.list_for(B)).threads] == [thread]

    after = (await threads.timeline(thread)).events
    assert [(e.id, e.seq, e.position, e.at) for e in after] == [
        (e.id, e.seq, e.position, e.at) for e in before
    ]
    assert [_who(e) for e in after] == [
        "person:b", "role:concierge", "person:b", "role:concierge", "person:b", "person:b",
    ]  # fmt: skip
    assert next(e.text for e in after if isinstance(e, Message)) == "hello, I am on the web"
    seen_by_b = (await threads.timeline(thread, viewer=B)).events
    assert [e.seq for e in seen_by_b] == [1, 2, 3, 5, 6]  # a's blackout is b's now
    assert (await db.runs.get(run.id)).thread_id == thread
    entries = await db.memory.recall("concierge", parse_recall("tea", limit=5), thread_id=thread)
    assert [e.payload["text"] for e in entries] == ["a likes tea"]
    assert await db.people.predecessors(thread) == []


def _who(event: object) -> str:
    if isinstance(event, Message | Retraction):
        return event.author
    assert isinstance(event, StateChange)
    return event.participant


async def test_a_merge_keeps_both_threads_when_the_new_person_has_one_already(
    database: Database,
) -> None:
    await _person_with(database, "a", WEB_A)
    await _person_with(database, "b", WEB_B)
    older = await _thread(database, "person:a", "role:concierge")
    await database.threads.post_message(older, A, "said on the web")
    newer = await _thread(database, "person:b", "role:concierge")
    await database.threads.post_message(newer, B, "said on slack")
    group = await _thread(database, "person:a", "person:b", "role:concierge")
    await database.threads.post_message(group, A, "said in the group")

    await _link(database, "b", WEB_A)

    assert await database.people.predecessors(newer) == [older]
    kept = await database.threads.get(older)
    assert kept.states == {A: ACTIVE, ROLE: ACTIVE}  # untouched: never moved, never deleted
    assert _said((await database.threads.timeline(older)).events) == ["said on the web"]
    assert _said((await database.threads.timeline(newer)).events) == ["said on slack"]
    assert (await database.threads.get(group)).states == {A: ACTIVE, B: ACTIVE, ROLE: ACTIVE}
    assert await database.people.predecessors(group) == []


async def test_writes_in_the_same_batch_as_a_merge_are_re_addressed_too(
    database: Database,
) -> None:
    """A message and a state change of `a` queued together with the redemption (so committed in
    the same writer batch, before it) end up as `b`'s, like everything said before."""
    await _person_with(database, "a", WEB_A)
    await _person_with(database, "b", WEB_B)
    thread = await _thread(database, "person:a", "role:concierge")
    code = await database.people.new_link_code("b", timedelta(minutes=5))
    message, change, person = await asyncio.gather(
        database.threads.post_message(thread, A, "just before the link"),
        database.threads.set_participant_state(thread, A, REMOVED),
        database.people.redeem(code.code, WEB_A),
    )
    assert person.slug == "b"
    current = await database.threads.get(thread)
    assert current.states == {B: REMOVED, ROLE: ACTIVE}
    events = (await database.threads.timeline(thread)).events
    assert [(e.id, _who(e)) for e in events] == [(message.id, B), (change.id, B)]
    with pytest.raises(NotAllowed) as late:  # a is no member's address any more
        await database.threads.post_message(thread, A, "too late")
    assert late.value.code == "not_a_member"


async def test_a_merged_person_cannot_be_reactivated_or_linked_to(database: Database) -> None:
    await _person_with(database, "a", WEB_A)
    await _person_with(database, "b", WEB_B)
    stale = await database.people.new_link_code("a", timedelta(minutes=5))
    await _link(database, "b", WEB_A)
    for attempt in (
        database.people.reactivate("a"),
        database.people.add_identity("a", SLACK_A),
        database.people.new_link_code("a", timedelta(minutes=5)),
        database.people.redeem(stale.code, SLACK_A),
    ):
        with pytest.raises(Conflict) as caught:
            await attempt
        assert caught.value.code == "person_merged"
    assert Address("person:a") in await database.people.inactive([A])


async def test_merges_chain_to_the_person_who_remains(database: Database) -> None:
    await _person_with(database, "z", SLACK_A)
    await _person_with(database, "a", WEB_A)
    await _person_with(database, "b", WEB_B)
    await _link(database, "a", SLACK_A)  # z into a
    assert (await database.people.get("z")).merged_into == "a"
    await _link(database, "b", WEB_A)  # a (with z's identity still) keeps one: no merge yet
    assert (await database.people.get("a")).merged_into is None
    await _link(database, "b", SLACK_A)  # a's last: a into b, and z with them
    assert [(p.slug, p.merged_into) for p in await database.people.list()] == [
        ("a", "b"),
        ("b", None),
        ("z", "b"),
    ]
