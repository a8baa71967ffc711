"""A person posts into a conversation with a role and gets that role's reply: in order, once."""

from __future__ import annotations

from collections.abc import AsyncIterator

from core.engine.runtimes.base import Prompt, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.runs.run import RunStatus, TurnCause, TurnOutcome
from tests.host.scene import MakeScene, role
from tests.waiting import eventually


async def test_200_messages_back_to_back_get_200_echoes_in_order(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("echo")]) as scene:
        thread = await scene.conversation("person:ann", "role:echo")
        sent = [f"message {i}" for i in range(200)]
        for text in sent:
            await scene.say(thread, "person:ann", text)

        replies = await scene.replies(thread, "role:echo", 200, within=60)
        await scene.host.sleep_idle()  # let any stray extra turn show up before counting
        assert replies == sent
        assert await scene.said_by(thread, "role:echo") == sent  # none doubled
        run = await scene.run_of(thread)
        assert run.status is RunStatus.READY
        events = await scene.events(thread)
        assert run.cursor == events[-1].seq  # it has looked at everything, its own replies too


async def test_each_reply_follows_the_message_it_answers(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("echo")]) as scene:
        thread = await scene.conversation("person:ann", "role:echo")
        for text in ("one", "two", "three"):
            await scene.say(thread, "person:ann", text)
            await scene.replies(thread, "role:echo", ["one", "two", "three"].index(text) + 1)

        texts = [getattr(e, "text", None) for e in await scene.events(thread)]
        assert texts == ["one", "one", "two", "two", "three", "three"]


async def test_a_group_thread_answers_every_person(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("echo")]) as scene:
        thread = await scene.conversation("person:ann", "person:bob", "role:echo")
        await scene.say(thread, "person:ann", "from ann")
        await scene.say(thread, "person:bob", "from bob")

        assert await scene.replies(thread, "role:echo", 2) == ["from ann", "from bob"]


async def test_the_role_does_not_answer_itself_or_another_role(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("echo"), role("copy", agent="echo")]) as scene:
        thread = await scene.conversation("person:ann", "role:echo", "role:copy")
        await scene.say(thread, "person:ann", "hi")

        await scene.replies(thread, "role:echo", 1)
        await scene.replies(thread, "role:copy", 1)
        await scene.host.sleep_idle()
        assert await scene.said_by(thread, "role:echo") == ["hi"]
        assert await scene.said_by(thread, "role:copy") == ["hi"]


async def test_a_turn_without_a_reply_ends_in_a_notice_to_the_person(
    make_scene: MakeScene,
) -> None:
    class Mute(BuiltinAgent):
        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            return
            yield

    async with make_scene([role("mute")], agents={"mute": Mute}) as scene:
        thread = await scene.conversation("person:ann", "role:mute")
        await scene.say(thread, "person:ann", "hello?")

        found = await scene.wait_for_notes(thread, 1)
        assert found == ["Mute did not answer this time. Send another message to try again."]
        run = await scene.run_of(thread)
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.cause is TurnCause.MESSAGE
        assert turn.outcome is TurnOutcome.NO_ANSWER
        assert turn.replies and turn.replies[0] == (await scene.events(thread))[-1].id


async def test_the_transcript_keeps_what_the_run_was_told_and_did(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("concierge")]) as scene:
        thread = await scene.conversation("person:ann", "role:concierge")
        await scene.say(thread, "person:ann", "remember the blue door")
        [reply] = await scene.replies(thread, "role:concierge", 1)

        assert reply == "Hello, I'm Concierge. I'll remember that: the blue door."
        run = await scene.run_of(thread)
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.REPLIED
        assert turn.prompt["opening"] is True
        assert turn.prompt["pending"] == 1
        assert [e["text"] for e in turn.prompt["news"]] == ["remember the blue door"]
        assert [s["kind"] for s in turn.steps] == ["thought", "tool_call", "reply"]
        call = turn.steps[1]
        assert call["name"] == "store"
        assert call["arguments"] == {"payload": {"kind": "note", "text": "the blue door"}}
        assert call["result"]["shared"] is False
        assert turn.steps[-1]["text"] == reply
        assert len(turn.attempts) == 1 and turn.attempts[0].error is None
        assert turn.started_at <= turn.finished_at
        assert turn.queued_at <= turn.started_at


async def test_a_message_sent_with_the_tool_during_the_turn_is_its_answer(
    make_scene: MakeScene,
) -> None:
    class Sender(BuiltinAgent):
        async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
            await tools.send_message("sent with the tool")
            return
            yield

    async with make_scene([role("sender")], agents={"sender": Sender}) as scene:
        thread = await scene.conversation("person:ann", "role:sender")
        await scene.say(thread, "person:ann", "hello")

        assert await scene.replies(thread, "role:sender", 1) == ["sent with the tool"]
        run = await scene.run_of(thread)
        [turn] = await eventually(lambda: scene.db.runs.turns(run.id))
        assert turn.outcome is TurnOutcome.REPLIED
        assert await scene.notes(thread) == []  # no "did not answer" notice
