"""A turn whose end does not commit: the run is not left `ready` with its news unanswered.

The database refuses the end for real: a trigger the test installs makes it refuse any event
whose text holds "refuse me" (as it would refuse a value it cannot store), and the test's agent
says that in its first turns only. The run reads again after a backoff and takes the turn again;
if the end is refused every time, the turn is stored as failed and the people are told.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator
from typing import ClassVar

import asyncpg
import pytest

from core.engine.host import HostLimits
from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.runs.run import RunStatus, TurnOutcome
from core.model.timeline import Message
from core.storage.threads_commands import PostMessage
from tests.host.scene import MakeScene, role
from tests.waiting import eventually

REFUSED = "refuse me"

_PG_TRIGGER = f"""
CREATE FUNCTION refuse_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.text LIKE '%{REFUSED}%' THEN RAISE EXCEPTION 'refused by the test'; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_text BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_text();
"""
_PG_DROP = "DROP TRIGGER IF EXISTS refuse_text ON events; DROP FUNCTION IF EXISTS refuse_text();"
_SQLITE_TRIGGER = f"""
CREATE TRIGGER refuse_text BEFORE INSERT ON events WHEN NEW.text LIKE '%{REFUSED}%'
BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
"""


async def _postgres(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture
def refusing(database_url: str) -> Iterator[None]:
    """The database refuses every event whose text holds "refuse me", for the test's length."""
    if database_url.startswith("postgresql"):
        asyncio.run(_postgres(database_url, _PG_TRIGGER))
        try:
            yield
        finally:
            asyncio.run(_postgres(database_url, _PG_DROP))
        return
    with contextlib.closing(sqlite3.connect(database_url.split("///", 1)[1])) as connection:
        connection.execute(_SQLITE_TRIGGER)
        connection.commit()
    yield


class Prompted(BuiltinAgent):
    """An agent that counts its prompts: each test's agent is a class of its own."""

    prompts: ClassVar[int] = 0


def refused_first(turns: int) -> type[Prompted]:
    """Its first `turns` prompts are answered with text the database refuses; then it echoes."""

    class RefusedFirst(Prompted):
        prompts: ClassVar[int] = 0

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).prompts += 1
            for event in prompt.news:
                if type(self).prompts <= turns:
                    yield Reply(f"{REFUSED}: {event.text}")
                else:
                    yield Reply(event.text or "")

    return RefusedFirst


async def test_a_turn_end_refused_once_is_taken_again_and_the_person_gets_the_answer(
    make_scene: MakeScene,
    refusing: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = refused_first(1)
    async with make_scene([role("echoer")], agents={"echoer": agent}) as scene:
        thread = await scene.conversation("person:ann", "role:echoer")
        await scene.say(thread, "person:ann", "hello")

        assert await scene.replies(thread, "role:echoer", 1) == ["hello"]
        assert agent.prompts == 2  # prompted again after the refused end
        assert "the turn's end could not be stored" in caplog.text
        assert "refused by the test" in caplog.text
        run = await scene.run_of(thread)
        assert run.status is RunStatus.READY and run.failures == 0
        [turn] = await scene.db.runs.turns(run.id)  # the refused end left no record
        assert turn.outcome is TurnOutcome.REPLIED
        assert await scene.notes(thread) == []
        assert run.cursor == (await scene.events(thread))[-1].seq


async def test_a_turn_end_refused_every_time_is_stored_as_failed_and_the_people_are_told(
    make_scene: MakeScene, refusing: None
) -> None:
    agent = refused_first(1_000)
    limits = HostLimits(attempts=3, backoff=0.01)
    async with make_scene([role("echoer")], agents={"echoer": agent}, limits=limits) as scene:
        thread = await scene.conversation("person:ann", "role:echoer")
        said = await scene.say(thread, "person:ann", "hello")

        [note] = await scene.wait_for_notes(thread, 1)
        assert "could not answer" in note
        assert agent.prompts == 3  # three ends refused; the third is stored as failed
        run = await scene.run_of(thread)
        assert run.status is RunStatus.FAILED and run.cursor > said.seq
        assert "the turn's end could not be stored" in (run.last_error or "")
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.FAILED
        assert [step["kind"] for step in turn.steps] == ["error"]
        assert await scene.said_by(thread, "role:echoer") == []


async def test_conversations_get_their_replies_while_someone_keeps_sending_text_storage_refuses(
    make_scene: MakeScene,
) -> None:
    """The issue's scene: a visitor's writes that storage refuses (a lone surrogate, sent past
    the edge) share the writer's batches with the runs' turn ends; every conversation is still
    answered, and the visitor's text is never stored."""
    async with make_scene([role("echo", max_concurrent_turns=64)]) as scene:
        visitor = await scene.conversation("person:visitor", "role:echo")
        threads = [await scene.conversation(f"person:p{i}", "role:echo") for i in range(30)]
        stop = asyncio.Event()

        async def bad_visitor() -> int:
            refused = 0
            while not stop.is_set():
                bad = PostMessage(visitor, "person:visitor", "\ud800", None)  # type: ignore[arg-type]
                with contextlib.suppress(Exception):
                    await scene.db._writer.run(bad)
                refused += 1
            return refused

        flooding = [asyncio.create_task(bad_visitor()) for _ in range(4)]
        try:
            await asyncio.gather(
                *(scene.say(thread, f"person:p{i}", f"hi {i}") for i, thread in enumerate(threads))
            )

            async def answered() -> bool:
                said = [await scene.said_by(t, "role:echo") for t in threads]
                return all(s == [f"hi {i}"] for i, s in enumerate(said))

            await eventually(answered, within=30)
        finally:
            stop.set()
            refused = await asyncio.gather(*flooding)
        assert sum(refused) > 0
        assert not [e for e in await scene.events(visitor) if isinstance(e, Message)]
