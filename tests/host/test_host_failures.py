"""When a turn goes wrong: retries with backoff, then a failed run and a notice to the people;
timeouts; control that stops a turn at once and leaves the run usable."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import ClassVar

from core.engine.host import HostLimits, RunHost
from core.engine.runtimes.base import AgentError, Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.runs.run import RunId, RunStatus, Turn, TurnOutcome
from tests.host.scene import MakeScene, role
from tests.waiting import eventually

COULD_NOT = "Flaky could not answer because of an error. Send another message to try again."


class Attempted(BuiltinAgent):
    """An agent that counts its attempts: each test's agent is a class of its own."""

    attempts: ClassVar[int] = 0


def flaky(failures: int) -> type[Attempted]:
    """An agent whose first `failures` attempts raise; then it echoes."""

    class Flaky(Attempted):
        attempts: ClassVar[int] = 0

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).attempts += 1
            if type(self).attempts <= failures:
                raise AgentError(f"model endpoint said no (attempt {type(self).attempts})")
            for event in prompt.news:
                yield Reply(event.text or "")

    return Flaky


async def test_a_failed_attempt_is_retried_and_the_turn_still_answers(
    make_scene: MakeScene,
) -> None:
    agent = flaky(2)
    async with make_scene([role("flaky")], agents={"flaky": agent}) as scene:
        thread = await scene.conversation("person:ann", "role:flaky")
        await scene.say(thread, "person:ann", "hello")

        assert await scene.replies(thread, "role:flaky", 1) == ["hello"]
        run = await scene.run_of(thread)
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.REPLIED
        assert [a.error is None for a in turn.attempts] == [False, False, True]
        assert "model endpoint said no (attempt 1)" in (turn.attempts[0].error or "")
        assert run.status is RunStatus.READY
        assert await scene.notes(thread) == []


async def test_a_turn_that_fails_every_attempt_fails_the_run_and_tells_the_people(
    make_scene: MakeScene,
) -> None:
    agent = flaky(3)
    async with make_scene([role("flaky")], agents={"flaky": agent}) as scene:
        thread = await scene.conversation("person:ann", "role:flaky")
        await scene.say(thread, "person:ann", "hello")

        assert await scene.wait_for_notes(thread, 1) == [COULD_NOT]
        run = await scene.run_of(thread)
        assert run.status is RunStatus.FAILED
        assert run.failures == 1
        assert "attempt 3" in (run.last_error or "")
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.FAILED
        assert len(turn.attempts) == 3 and all(a.error for a in turn.attempts)
        assert await scene.said_by(thread, "role:flaky") == []

        # The next person message tries again, and this time the agent answers.
        await scene.say(thread, "person:ann", "again")
        assert await scene.replies(thread, "role:flaky", 1) == ["again"]
        run = await scene.db.runs.get(run.id)
        assert run.status is RunStatus.READY and run.failures == 0


async def test_retries_back_off(
    make_scene: MakeScene,
) -> None:
    agent = flaky(3)
    limits = HostLimits(attempts=3, backoff=0.2)
    async with make_scene([role("flaky")], agents={"flaky": agent}, limits=limits) as scene:
        thread = await scene.conversation("person:ann", "role:flaky")
        await scene.say(thread, "person:ann", "hello")
        await scene.wait_for_notes(thread, 1)

        run = await scene.run_of(thread)
        [turn] = await scene.db.runs.turns(run.id)
        gaps = [
            (later.started_at - earlier.finished_at).total_seconds()
            for earlier, later in zip(turn.attempts, turn.attempts[1:], strict=False)
        ]
        assert gaps[0] >= 0.2 and gaps[1] >= 0.4  # 0.2 s, then doubled


async def test_a_turn_that_takes_too_long_times_out_and_fails(
    make_scene: MakeScene,
) -> None:
    slow = role("echo", turn_timeout=0.2, runtime={"delay_ms": 5000})
    async with make_scene([slow], limits=HostLimits(attempts=1)) as scene:
        thread = await scene.conversation("person:ann", "role:echo")
        started = time.monotonic()
        await scene.say(thread, "person:ann", "hello")

        [note] = await scene.wait_for_notes(thread, 1)
        assert time.monotonic() - started < 2
        assert "could not answer" in note
        run = await scene.run_of(thread)
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.FAILED
        assert "turn_timeout" in (turn.error or "")


class Stalling(BuiltinAgent):
    """Stalls on "stall" (until cancelled), echoes anything else."""

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        for event in prompt.news:
            if event.text == "stall":
                await asyncio.sleep(3600)
            yield Reply(event.text or "")


async def test_cancel_stops_a_long_turn_at_once_and_the_run_stays_usable(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("staller", agent="stalling")], agents={"stalling": Stalling}) as s:
        thread = await s.conversation("person:ann", "role:staller")
        await s.say(thread, "person:ann", "stall")
        run = await s.run_of(thread)
        await eventually(lambda: s.host.is_running(run.id), what="the turn running")

        started = time.monotonic()
        assert await s.host.cancel(run.id) is True
        assert time.monotonic() - started < 1
        assert not s.host.is_running(run.id)
        [note] = await s.wait_for_notes(thread, 1)
        assert note == "Staller's turn was stopped by an operator before it answered."
        [turn] = await s.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.CANCELLED

        await s.say(thread, "person:ann", "still there?")
        assert await s.replies(thread, "role:staller", 1) == ["still there?"]
        assert await s.host.cancel(run.id) is False  # nothing running now


async def test_cancel_during_the_backoff_between_attempts_stops_the_retries(
    make_scene: MakeScene,
) -> None:
    agent = flaky(3)
    limits = HostLimits(attempts=3, backoff=30)
    async with make_scene([role("flaky")], agents={"flaky": agent}, limits=limits) as scene:
        thread = await scene.conversation("person:ann", "role:flaky")
        await scene.say(thread, "person:ann", "hello")
        run = await scene.run_of(thread)
        await eventually(
            lambda: agent.attempts == 1 and scene.host.is_running(run.id),
            what="the first attempt running",
        )

        started = time.monotonic()
        assert await scene.host.cancel(run.id) is True
        assert time.monotonic() - started < 1
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.CANCELLED
        assert [a.error for a in turn.attempts][1] == "cancelled by an operator"
        assert "attempt 1" in (turn.attempts[0].error or "")
        assert agent.attempts == 1  # no attempt after the cancel


async def test_a_cancel_that_lands_as_an_attempt_ends_stops_the_retries(
    make_scene: MakeScene,
) -> None:
    """The moment between attempts: the failed attempt's task is done, the turn has not yet
    moved on to its backoff. A stop asked for then (here by the agent itself, just before its
    second attempt fails: the request runs right after the attempt's task ends) must still end
    the turn — no third attempt."""
    stop: list[tuple[RunHost, RunId]] = []

    class StopsAsItFails(BuiltinAgent):
        attempts: ClassVar[int] = 0

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).attempts += 1
            if type(self).attempts == 2:
                [(host, run_id)] = stop
                asyncio.get_running_loop().call_soon(host.stop_turn, run_id)
            raise AgentError(f"model endpoint said no (attempt {type(self).attempts})")
            yield Reply("never")  # an async generator, like every agent's turn

    limits = HostLimits(attempts=3, backoff=0.2)
    agents = {"stopper": StopsAsItFails}
    async with make_scene([role("stopper")], agents=agents, limits=limits) as scene:
        thread = await scene.conversation("person:ann", "role:stopper")
        await scene.say(thread, "person:ann", "hello")
        run = await scene.run_of(thread)
        stop.append((scene.host, run.id))

        async def ended() -> list[Turn]:
            return list(await scene.db.runs.turns(run.id))

        [turn] = await eventually(ended)
        assert turn.outcome is TurnOutcome.CANCELLED
        errors = [a.error or "" for a in turn.attempts]
        assert len(errors) == 3, errors
        assert "attempt 1" in errors[0] and "attempt 2" in errors[1]
        assert errors[2] == "cancelled by an operator"
        assert StopsAsItFails.attempts == 2  # no attempt after the stop


async def test_a_reply_being_written_is_drafted_and_an_attempt_that_fails_abandons_it(
    make_scene: MakeScene,
) -> None:
    from core.engine.host.drafts import Draft, DraftKind
    from core.engine.runtimes.base import ReplyChunk

    class Drafting(BuiltinAgent):
        attempts: ClassVar[int] = 0

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).attempts += 1
            yield ReplyChunk("half ")
            if type(self).attempts == 1:
                raise AgentError("cut off mid-reply")
            yield ReplyChunk("whole")
            yield Reply("half whole")

    async with make_scene([role("drafting")], agents={"drafting": Drafting}) as scene:
        drafts: list[Draft] = []
        scene.host.watch_drafts(drafts.append)
        thread = await scene.conversation("person:ann", "role:drafting")
        await scene.say(thread, "person:ann", "write")

        assert await scene.replies(thread, "role:drafting", 1) == ["half whole"]
        assert [(d.kind, d.text) for d in drafts] == [
            (DraftKind.CHUNK, "half "),
            (DraftKind.ABANDONED, ""),  # the failed attempt's draft is not the reply
            (DraftKind.CHUNK, "half "),
            (DraftKind.CHUNK, "whole"),
            (DraftKind.END, ""),
        ]
        assert {(d.thread_id, d.role) for d in drafts} == {(thread, "drafting")}
