"""Retention (docs/privacy.md): with a retention of seconds on a test clock, the messages, memory,
transcripts and Slack delivery records past it are gone and the rest is untouched; the timeline
still reads and pages, with every `seq` where it was; a run whose cursor pointed into removed
history answers the next message; a role that keeps forever, and a conversation it shares with
nobody else, keep everything; a housekeeping pass is what expires them. On SQLite and PostgreSQL,
with the real run host and echo agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from channels.edge.leasing import ONE_PROCESS
from core.engine.host import RunHost
from core.engine.runtimes.registry import Runtimes
from core.model.memory import MemoryEntry
from core.model.retention import Kept, Retention, parse_duration
from core.model.roles import ManifestError, Role
from core.model.roles.manifests import load_role
from core.model.timeline import Message, ThreadId
from core.storage.database import Database, open_database
from core.storage.slack_store import PostedToSlack
from gateway.housekeeping import pass_if_held
from gateway.metrics import Metrics
from gateway.retention import TABLES, expire_once
from gateway.settings import SettingsError, load_settings
from tests.host.scene import FAST, Scene, role
from tests.settings import make_settings

ANN, BOB = "person:ann", "person:bob"


class Clock:
    """The writer's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@asynccontextmanager
async def hosted(database_url: str, clock: Clock, *roles: Role) -> AsyncIterator[Scene]:
    database = await open_database(database_url, clock=clock)
    host = RunHost(database, {r.name: r for r in roles}, Runtimes(), limits=FAST, clock=clock)
    await host.start()
    try:
        yield Scene(database, host)
    finally:
        await host.stop()
        await database.close()


async def _timeline(db: Database, thread: ThreadId) -> list[tuple[int, str, str]]:
    page = await db.threads.timeline(thread, limit=100)
    return [(e.seq, e.kind.value, getattr(e, "text", "")) for e in page.events]


async def _turns(db: Database, scene: Scene, thread: ThreadId) -> int:
    run = await scene.run_of(thread)
    return len(await db.runs.turns(run.id))


SHORT = {"messages": "10s", "memory": "10s", "transcripts": "10s", "deliveries": "10s"}


async def test_what_is_past_its_retention_goes_and_the_rest_stays(database_url: str) -> None:
    clock = Clock()
    brief = role("brief", "echo", retention=SHORT)
    keeper = role("keeper", "echo")  # keeps everything: no retention of its own, none by default
    roles = {"brief": brief, "keeper": keeper}
    async with hosted(database_url, clock, brief, keeper) as scene:
        db = scene.db
        ann = await scene.conversation(ANN, "role:brief")
        bob = await scene.conversation(BOB, "role:keeper")
        for thread, person, who in ((ann, ANN, "role:brief"), (bob, BOB, "role:keeper")):
            await scene.say(thread, person, "my locker is 42")
            assert await scene.replies(thread, who, 1) == ["my locker is 42"]
        await db.memory.store("brief", {"locker": 42}, thread_id=ann)
        await db.memory.store("keeper", {"locker": 42}, thread_id=bob)
        reply = next(
            e
            for e in await scene.events(ann)
            if isinstance(e, Message) and e.author == "role:brief"
        )
        await db.slack.posted(
            PostedToSlack(
                role="brief", message_id=reply.id, channel_id="D1", ts="1.0", thread_ts=None
            )
        )
        assert await _turns(db, scene, ann) == 1
        before = await _timeline(db, ann)

        clock.advance(60)  # past the retention of `brief`
        await scene.say(ann, ANN, "and my desk is 4B")
        assert await scene.replies(ann, "role:brief", 2) == ["my locker is 42", "and my desk is 4B"]
        await db.memory.store("brief", {"desk": "4B"}, thread_id=ann)

        removed = await expire_once(
            db, {r.name: r for r in (brief, keeper)}, Retention(), Metrics()
        )
        assert removed == {
            Kept.MESSAGES: 2,  # Ann's first message and the role's answer
            Kept.MEMORY: 1,
            Kept.TRANSCRIPTS: 1,
            Kept.DELIVERIES: 1,
        }
        after = await _timeline(db, ann)
        # the old messages are gone; what is left keeps its seq; nothing is renumbered
        assert [t for t in after if t[1] == "message"] == [
            t for t in after if t[1] == "message" and t[0] > before[-1][0]
        ]
        assert [text for _, kind, text in after if kind == "message"] == [
            "and my desk is 4B",
            "and my desk is 4B",
        ]
        paged, after_seq = [], 0  # page by page, one event a page, across the gaps
        while page := (await db.threads.timeline(ann, after=after_seq, limit=1)).events:
            paged.append(page[0].seq)
            after_seq = page[0].seq
        assert paged == [seq for seq, _, _ in after]
        kept = {t for t in before if t[1] != "message"}
        assert kept <= set(after)  # the membership history stays, where it was
        assert [e.payload for e in await _memory(db, "brief")] == [{"desk": "4B"}]
        assert await _turns(db, scene, ann) == 1  # the second turn's record, not the first's
        assert await db.slack.post_of("brief", reply.id) is None

        # Bob's conversation with the role that keeps everything is untouched
        assert len([e for e in await scene.events(bob) if isinstance(e, Message)]) == 2
        assert len(await _memory(db, "keeper")) == 1
        assert await _turns(db, scene, bob) == 1

        # the run, whose cursor is past removed history, answers the next message; its seq
        # follows the last one ever given, never one that was removed
        last = after[-1][0]
        said = await scene.say(ann, ANN, "thanks")
        assert said.seq == last + 1
        # (its first answer is gone: its two answers now are the desk's and this one)
        assert await scene.replies(ann, "role:brief", 2) == ["and my desk is 4B", "thanks"]
        # a second pass has nothing more to remove
        again = await expire_once(db, roles, Retention(), Metrics())
        assert sum(again.values()) == 0


async def test_the_default_applies_to_roles_without_their_own_and_to_conversations_without_roles(
    database_url: str,
) -> None:
    clock = Clock()
    forever = role("forever", "echo", retention={"messages": "forever"})
    plain = role("plain", "echo")
    async with hosted(database_url, clock, forever, plain) as scene:
        db = scene.db
        kept = await scene.conversation(ANN, "role:forever")
        gone = await scene.conversation(ANN, "role:plain")
        people_only = await scene.conversation(ANN, BOB)
        for thread, who in ((kept, "role:forever"), (gone, "role:plain")):
            await scene.say(thread, ANN, "hello")
            await scene.replies(thread, who, 1)
        await scene.say(people_only, ANN, "hi Bob")
        clock.advance(3_600)
        default = Retention(messages=parse_duration("30m"))
        roles = {"forever": forever, "plain": plain}
        removed = await expire_once(db, roles, default, Metrics())
        assert removed[Kept.MESSAGES] == 3
        assert len([e for e in await scene.events(kept) if isinstance(e, Message)]) == 2
        assert [e for e in await scene.events(gone) if isinstance(e, Message)] == []
        assert [e for e in await scene.events(people_only) if isinstance(e, Message)] == []


async def test_a_conversation_of_two_roles_keeps_its_messages_for_the_shorter_retention(
    database_url: str,
) -> None:
    clock = Clock()
    week = role("week", "echo", retention={"messages": "7d"})
    hour = role("hour", "echo", retention={"messages": "1h"})
    async with hosted(database_url, clock, week, hour) as scene:
        db = scene.db
        both = await scene.conversation(ANN, "role:week", "role:hour")
        await scene.say(both, ANN, "hello both")
        await scene.replies(both, "role:week", 1)
        await scene.replies(both, "role:hour", 1)
        clock.advance(2 * 3_600)
        await expire_once(db, {"week": week, "hour": hour}, Retention(), Metrics())
        assert [e for e in await scene.events(both) if isinstance(e, Message)] == []


async def test_a_housekeeping_pass_expires_what_is_past_its_retention(
    database_url: str, tmp_path: Path
) -> None:
    clock = Clock()
    brief = role("brief", "echo", retention={"messages": "10s"})
    async with hosted(database_url, clock, brief) as scene:
        ann = await scene.conversation(ANN, "role:brief")
        await scene.say(ann, ANN, "my locker is 42")
        await scene.replies(ann, "role:brief", 1)
        clock.advance(60)
        settings = make_settings(tmp_path, database_url=database_url)
        metrics, leasing = Metrics(), ONE_PROCESS.leasing(scene.db.leases)
        roles = {"brief": brief}
        assert await pass_if_held(scene.db, settings, metrics, (), leasing, roles=roles)
        assert [e for e in await scene.events(ann) if isinstance(e, Message)] == []
        counted = {"table": TABLES[Kept.MESSAGES]}
        assert metrics.registry.get_sample_value("rolecall_records_pruned_total", counted) == 2


async def _memory(db: Database, role_name: str) -> list[MemoryEntry]:
    return list(await db.memory.list(role_name, after=None, limit=50))


def test_retentions_are_written_as_durations() -> None:
    assert parse_duration("365d") == timedelta(days=365)
    assert parse_duration(" 12h ") == timedelta(hours=12)
    assert Retention(messages=parse_duration("forever")).of(Kept.MESSAGES) is None
    assert Retention(memory=parse_duration("8w")).over(
        Retention(memory=parse_duration("1d"), transcripts=parse_duration("30d"))
    ) == Retention(memory=timedelta(weeks=8), transcripts=timedelta(days=30))
    for wrong in ("soon", "0s", "10y", "-1d", True):
        try:
            parse_duration(wrong)
        except Exception as error:
            assert "retention" in str(error)
        else:
            raise AssertionError(f"{wrong!r} was taken")


def test_a_retention_that_is_not_one_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "support.yaml"
    path.write_text(
        "name: support\ndisplay_name: Support\nruntime: {kind: builtin, agent: echo}\n"
        "retention: {messages: soon}\n",
        encoding="utf-8",
    )
    with pytest.raises(ManifestError) as refused:
        load_role(path)
    assert str(refused.value).startswith(f"{path}: retention.messages: 'soon' is not a retention")


def test_a_default_retention_that_is_not_one_stops_the_settings() -> None:
    with pytest.raises(SettingsError, match="ROLECALL_RETAIN_TRANSCRIPTS"):
        load_settings(retain_transcripts="a while")
    assert load_settings(retain_messages="365d").retention.of(Kept.MESSAGES) == timedelta(days=365)
