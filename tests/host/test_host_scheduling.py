"""When turns run: per-thread FIFO, different threads concurrently (unless the role says no),
nudges collapsing into one turn, slots."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import ClassVar

from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.timeline import ThreadId
from tests.host.scene import MakeScene, Scene, role
from tests.waiting import eventually


async def _reply_time(scene: Scene, thread: ThreadId, author: str, count: int) -> float:
    await scene.replies(thread, author, count, within=20)
    return time.monotonic()


async def _turn_running(scene: Scene, thread: ThreadId) -> None:
    run = await scene.run_of(thread)
    await eventually(lambda: scene.host.is_running(run.id), what=f"a turn of {run.id} running")


async def test_a_slow_turn_in_one_conversation_does_not_delay_another(
    make_scene: MakeScene,
) -> None:
    slow = role("echo", runtime={"delay_ms": 2000})
    async with make_scene([slow]) as scene:
        a = await scene.conversation("person:ann", "role:echo")
        b = await scene.conversation("person:bob", "role:echo")
        started = time.monotonic()
        await scene.say(a, "person:ann", "a")
        await _turn_running(scene, a)
        await scene.say(b, "person:bob", "b")

        a_done, b_done = await asyncio.gather(
            _reply_time(scene, a, "role:echo", 1), _reply_time(scene, b, "role:echo", 1)
        )
        # B started once A's turn was running and took its own 2 s: done soon after A.
        # Had B waited for A's turn it would end ~2 s after A (4 s in all); the bounds leave
        # room for a busy machine's stalls and still tell the two apart.
        assert b_done - started < 3.5
        assert b_done - a_done < 1.5


async def test_a_role_without_concurrent_threads_takes_one_turn_at_a_time(
    make_scene: MakeScene,
) -> None:
    serial = role("echo", concurrent_threads=False, runtime={"delay_ms": 1000})
    async with make_scene([serial]) as scene:
        a = await scene.conversation("person:ann", "role:echo")
        b = await scene.conversation("person:bob", "role:echo")
        started = time.monotonic()
        await scene.say(a, "person:ann", "a")
        await _turn_running(scene, a)
        await scene.say(b, "person:bob", "b")

        a_done, b_done = await asyncio.gather(
            _reply_time(scene, a, "role:echo", 1), _reply_time(scene, b, "role:echo", 1)
        )
        assert b_done - started >= 1.9  # B waited for A's whole turn, then took its own
        assert b_done > a_done


async def test_max_concurrent_turns_bounds_a_roles_turns_at_once(
    make_scene: MakeScene,
) -> None:
    class Counting(BuiltinAgent):
        running: ClassVar[int] = 0
        most: ClassVar[int] = 0

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            cls = type(self)
            cls.running += 1
            cls.most = max(cls.most, cls.running)
            await asyncio.sleep(0.1)
            cls.running -= 1
            yield Reply("done")

    async with make_scene(
        [role("busy", agent="counting", max_concurrent_turns=2)], agents={"counting": Counting}
    ) as scene:
        threads = [await scene.conversation(f"person:p{i}", "role:busy") for i in range(6)]
        for i, thread in enumerate(threads):
            await scene.say(thread, f"person:p{i}", "go")
        for thread in threads:
            await scene.replies(thread, "role:busy", 1)

        assert Counting.most == 2


async def test_nudges_during_a_turn_collapse_into_one_next_turn_with_all_news(
    make_scene: MakeScene,
) -> None:
    class Recorder(BuiltinAgent):
        prompts: ClassVar[list[Prompt]] = []

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).prompts.append(prompt)
            if len(type(self).prompts) == 1:
                await asyncio.sleep(0.5)
            for event in prompt.news:
                yield Reply(f"got {event.text}")

    async with make_scene([role("rec", agent="recorder")], agents={"recorder": Recorder}) as s:
        thread = await s.conversation("person:ann", "role:rec")
        await s.say(thread, "person:ann", "first")
        await eventually(lambda: Recorder.prompts, what="the first turn started")
        for text in ("second", "third", "fourth"):
            await s.say(thread, "person:ann", text)

        replies = await s.replies(thread, "role:rec", 4)
        assert replies == ["got first", "got second", "got third", "got fourth"]
        assert len(Recorder.prompts) == 2
        second = Recorder.prompts[1]
        assert [e.text for e in second.news] == ["second", "third", "fourth"]
        assert second.pending == 3
        assert second.opening is False
        run = await s.run_of(thread)
        assert run.turns == 2


async def test_peek_pending_shows_what_arrived_during_the_turn_without_consuming_it(
    make_scene: MakeScene,
) -> None:
    class Peeker(BuiltinAgent):
        prompts: ClassVar[list[Prompt]] = []

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).prompts.append(prompt)
            if len(type(self).prompts) == 1:
                await asyncio.sleep(0.4)
                waiting = await tools.peek_pending()
                yield Reply("meanwhile: " + ", ".join(e.text or "" for e in waiting))
            else:
                yield Reply("now: " + ", ".join(e.text or "" for e in prompt.news))

    async with make_scene([role("peek", agent="peeker")], agents={"peeker": Peeker}) as scene:
        thread = await scene.conversation("person:ann", "role:peek")
        await scene.say(thread, "person:ann", "first")
        await eventually(lambda: Peeker.prompts, what="the first turn started")
        await scene.say(thread, "person:ann", "second")

        replies = await scene.replies(thread, "role:peek", 2)
        assert replies == ["meanwhile: second", "now: second"]
