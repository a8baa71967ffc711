"""Sessions: idle sleep and wake resume the same session; "start fresh" opens a new one whose
opening prompt carries the recent conversation; news left from before a restart is answered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.runs.conversation import FRESH_SESSION_NOTICE
from core.model.timeline import Message
from tests.host.scene import MakeScene, role
from tests.waiting import eventually


class Counter(BuiltinAgent):
    """Counts its turns in its session's state."""

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        self.state["turns"] = self.state.get("turns", 0) + 1
        yield Reply(f"turn {self.state['turns']} of this session")


async def test_an_idle_session_sleeps_and_wakes_as_the_same_session(
    make_scene: MakeScene,
) -> None:
    counter = role("counter", idle_sleep_after=0.2)
    async with make_scene([counter], agents={"counter": Counter}) as scene:
        thread = await scene.conversation("person:ann", "role:counter")
        await scene.say(thread, "person:ann", "one")
        await scene.replies(thread, "role:counter", 1)
        run = await scene.run_of(thread)
        assert scene.host.is_awake(run.id)

        await eventually(lambda: not scene.host.is_awake(run.id), what="the session asleep")

        await scene.say(thread, "person:ann", "two")
        replies = await scene.replies(thread, "role:counter", 2)
        assert replies == ["turn 1 of this session", "turn 2 of this session"]  # state kept
        assert scene.host.is_awake(run.id)
        after = await scene.db.runs.get(run.id)
        assert after.session.id == run.session.id and after.session.number == 1
        assert after.session.state == {"turns": 2}
        first, second = await scene.db.runs.turns(run.id)
        assert first.prompt["opening"] is True and second.prompt["opening"] is False


async def test_start_fresh_opens_a_session_whose_opening_prompt_has_the_recent_messages(
    make_scene: MakeScene,
) -> None:
    class Recorder(BuiltinAgent):
        prompts: ClassVar[list[Prompt]] = []

        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            type(self).prompts.append(prompt)
            self.state["turns"] = self.state.get("turns", 0) + 1
            yield Reply(f"turn {self.state['turns']} of this session")

    async with make_scene([role("rec", agent="recorder")], agents={"recorder": Recorder}) as s:
        thread = await s.conversation("person:ann", "role:rec")
        for text in ("one", "two"):
            await s.say(thread, "person:ann", text)
            await s.replies(thread, "role:rec", 1 if text == "one" else 2)
        run = await s.run_of(thread)

        fresh = await s.host.start_fresh(run.id)
        assert fresh.session.number == 2 and fresh.session.id != run.session.id
        await s.say(thread, "person:ann", "three")
        replies = await s.replies(thread, "role:rec", 3)

        assert replies[2] == "turn 1 of this session"  # a new session: its state starts empty
        opening = Recorder.prompts[-1]
        assert opening.opening is True
        assert [e.text for e in opening.news] == ["three"]
        recent = [e.text for e in opening.recent if e.kind == "message"]
        assert recent == ["one", "turn 1 of this session", "two", "turn 2 of this session"]

        # The person's view leaves the archived messages out unless asked for them.
        shown = [e for e in await s.events(thread, viewer=Address("person:ann"),
                                            include_archived=False)]  # fmt: skip
        assert [getattr(e, "text", None) for e in shown] == [
            FRESH_SESSION_NOTICE,
            "three",
            "turn 1 of this session",
        ]
        everything = await s.events(thread, viewer=Address("person:ann"), include_archived=True)
        assert len([e for e in everything if isinstance(e, Message)]) == 6


async def test_news_committed_while_no_host_ran_is_answered_when_one_starts(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("echo")], start=False) as scene:
        thread = await scene.conversation("person:ann", "role:echo")
        await scene.say(thread, "person:ann", "anyone?")
        await scene.host.start()

        assert await scene.replies(thread, "role:echo", 1) == ["anyone?"]


async def test_a_role_removed_from_the_conversation_is_not_prompted(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("echo")]) as scene:
        thread = await scene.conversation("person:ann", "role:echo")
        await scene.say(thread, "person:ann", "first")
        await scene.replies(thread, "role:echo", 1)
        await scene.db.threads.set_participant_state(
            thread, Address("role:echo"), ParticipantState.REMOVED
        )
        await scene.say(thread, "person:ann", "unheard")
        await scene.db.threads.set_participant_state(
            thread, Address("role:echo"), ParticipantState.ACTIVE
        )
        await scene.say(thread, "person:ann", "heard")

        replies = await scene.replies(thread, "role:echo", 2)
        assert replies == ["first", "heard"]  # what was said in its blackout never reaches it


async def test_the_concierge_remembers_across_a_fresh_session_but_not_across_conversations(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("concierge")]) as scene:
        ann = await scene.conversation("person:ann", "role:concierge")
        bob = await scene.conversation("person:bob", "role:concierge")
        await scene.say(ann, "person:ann", "remember my desk is 4B")
        await scene.replies(ann, "role:concierge", 1)
        run = await scene.run_of(ann)
        await scene.host.start_fresh(run.id)

        await scene.say(ann, "person:ann", "what do you remember?")
        await scene.say(bob, "person:bob", "what do you remember?")
        [_, in_ann] = await scene.replies(ann, "role:concierge", 2)
        [in_bob] = await scene.replies(bob, "role:concierge", 1)
        assert in_ann == "Hello, I'm Concierge. You asked me to remember: my desk is 4B."
        assert (
            in_bob == 'Hello, I\'m Concierge. Nothing yet. Tell me "remember …" and I will keep it.'
        )
