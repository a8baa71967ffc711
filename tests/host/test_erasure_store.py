"""Erasing a person in storage (docs/privacy.md), on SQLite and PostgreSQL, with the real run host
and echo agent: Ann's messages become tombstones that keep their place — in her conversation
the role's answers too, in a group thread only hers — her memory, identities and link codes go,
her transcripts lose their text, each of her threads gets one `erased` event, her address never
resolves again and her slug is nobody's again; Bob's conversation with the same role is
untouched; the plan says beforehand exactly what went; erasing again finishes, adds nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.engine.host import RunHost
from core.engine.runtimes.registry import Runtimes
from core.model.erasure import ERASED_NAME, ERASED_PROMPT, Erasure
from core.model.errors import Conflict, Gone
from core.model.participants import Address, ParticipantSet
from core.model.people import parse_identity
from core.model.timeline import Erased, Message, Retraction
from core.storage.database import open_database
from tests.host.scene import FAST, Scene, role

ANN, BOB = Address("person:ann"), Address("person:bob")
ANN_SLACK = parse_identity("slack:t1:U-ANN")


async def test_erasing_a_person_leaves_tombstones_and_nothing_of_theirs(database_url: str) -> None:
    coder = role("coder", "echo")
    database = await open_database(database_url)
    host = RunHost(database, {"coder": coder}, Runtimes(), limits=FAST)
    await host.start()
    try:
        scene, db = Scene(database, host), database
        await db.people.create(slug="ann", display_name="Ann Lee", email="ann@example.com")
        await db.people.create(slug="bob", display_name="Bob")
        await db.people.add_identity("ann", ANN_SLACK)
        await db.people.new_link_code("ann", timedelta(minutes=5))
        ann = await scene.conversation(ANN, "role:coder")
        bob = await scene.conversation(BOB, "role:coder")
        group = await scene.conversation(ANN, BOB, "role:coder")
        for thread, person in ((ann, ANN), (bob, BOB)):
            await scene.say(thread, person, "my locker is 42")
            assert await scene.replies(thread, "role:coder", 1) == ["my locker is 42"]
        wrong = await scene.say(ann, ANN, "oops, wrong window")
        await db.threads.retract(ann, wrong.id, ANN, reason="it said my address")
        await scene.replies(ann, "role:coder", 2)
        await scene.say(group, ANN, "Ann in the group")
        await scene.replies(group, "role:coder", 1)
        await scene.say(group, BOB, "Bob in the group")
        await scene.replies(group, "role:coder", 2)
        await db.memory.store("coder", {"locker": 42}, thread_id=ann)
        await db.memory.store("coder", {"locker": 42}, thread_id=bob)
        before = {t: await scene.events(t) for t in (ann, bob, group)}

        planned = await db.erasure.plan("ann")
        assert planned.threads == 2 and planned.identities == 1 and planned.link_codes == 1
        assert planned.messages == 4 + 1  # all four of her conversation, one of the group's
        assert planned.memory_entries == 1

        went = await db.erasure.erase("ann")
        assert went == planned

        after = {t: await scene.events(t) for t in (ann, bob, group)}
        assert after[bob] == before[bob]  # Bob's conversation is untouched
        for thread in (ann, group):
            old, new = before[thread], after[thread]
            assert [(e.id, e.seq, e.position, e.kind) for e in new[: len(old)]] == [
                (e.id, e.seq, e.position, e.kind) for e in old
            ]  # every event where it was
            erased = new[len(old) :]
            assert [(type(e), getattr(e, "participant", None)) for e in erased] == [(Erased, ANN)]
        tombstones = [e for e in after[ann] if isinstance(e, Message)]
        assert {(e.text, e.context, e.erased) for e in tombstones} == {("", None, True)}
        assert [e.reason for e in after[ann] if isinstance(e, Retraction)] == [None]
        group_said = {(e.author, e.text, e.erased) for e in after[group] if isinstance(e, Message)}
        assert group_said == {
            (ANN, "", True),
            (BOB, "Bob in the group", False),
            ("role:coder", "Ann in the group", False),  # in a group, the role's messages stay
            ("role:coder", "Bob in the group", False),
        }

        memory = await db.memory.list("coder", after=None, limit=50)
        assert [e.thread_id for e in memory] == [bob]
        run = await scene.run_of(ann)
        turns = await db.runs.turns(run.id)
        assert turns and all(t.prompt == ERASED_PROMPT and t.steps == [] for t in turns)
        bob_turns = await db.runs.turns((await scene.run_of(bob)).id)
        assert all(t.prompt != ERASED_PROMPT for t in bob_turns)

        tombstone, identities = await db.people.profile("ann")
        assert (tombstone.state, tombstone.display_name, tombstone.email) == (
            "erased",
            ERASED_NAME,
            None,
        )
        assert identities == []
        with pytest.raises(Gone):  # her address never reaches the old data again
            await db.threads.resolve(ParticipantSet.of([ANN, "role:coder"]))
        with pytest.raises(Conflict):
            await db.people.create(slug="ann", display_name="Another Ann")
        again = await db.people.resolve(ANN_SLACK, display_name="Ann")  # the same Slack user
        assert again.slug != "ann"  # is somebody new, with a conversation of their own

        # erasing again finishes what is left (nothing) and appends nothing
        assert await db.erasure.erase("ann") == Erasure(threads=2)
        assert [len(await scene.events(t)) for t in (ann, group)] == [
            len(after[ann]),
            len(after[group]),
        ]
    finally:
        await host.stop()
        await database.close()


async def test_whoever_was_merged_into_a_person_is_erased_with_them(database_url: str) -> None:
    database = await open_database(database_url)
    try:
        db = database
        visitor = parse_identity("web:shop:visitor:v1")
        first = await db.people.resolve(visitor, display_name="Visitor")
        thread, _ = await db.threads.resolve(ParticipantSet.of([first.address, "role:coder"]))
        await db.threads.post_message(thread.id, first.address, "hello", None)
        await db.people.create(slug="cat", display_name="Cat")
        other, _ = await db.threads.resolve(ParticipantSet.of(["person:cat", "role:coder"]))
        await db.threads.post_message(other.id, Address("person:cat"), "hi again", None)
        code = await db.people.new_link_code("cat", timedelta(minutes=5))
        await db.people.redeem(code.code, visitor)  # the visitor's last identity: merged
        assert (await db.people.get(first.slug)).merged_into == "cat"

        with pytest.raises(Conflict) as refused:
            await db.erasure.plan(first.slug)
        assert refused.value.code == "person_merged"
        went = await db.erasure.erase("cat")
        assert went.messages == 2
        assert (await db.people.get(first.slug)).state == "erased"
        for thread_id in {thread.id, other.id}:
            page = await db.threads.timeline(thread_id, limit=50)
            said = [e for e in page.events if isinstance(e, Message)]
            assert said and all(e.erased for e in said)
    finally:
        await database.close()
