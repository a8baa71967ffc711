"""Agent output that breaks the rule of acceptable values is mended, noted in the transcript,
and never fails the turn: a built-in (Python class) agent writes lone surrogates, NULs and
numbers no backend holds in everything the host commits from it — reply, drafts, steps, tool
calls, its session state, the error of a failed attempt. On SQLite and PostgreSQL (which
refuses a NUL anywhere, jsonb included)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import ClassVar

from core.engine.host.drafts import Draft, DraftKind
from core.engine.host.mending import Mending
from core.engine.runtimes.base import (
    AgentError,
    Prompt,
    Reply,
    ReplyChunk,
    Step,
    ToolCall,
    TurnTools,
    Update,
)
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.runs.run import RunStatus, TurnOutcome
from tests.host.scene import MakeScene, role


class Mangler(BuiltinAgent):
    """Its first attempt fails with an error holding a lone surrogate; then it answers with bad
    values everywhere, the first time; plainly after that."""

    prompts: ClassVar[int] = 0

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        type(self).prompts += 1
        if type(self).prompts == 1:
            raise AgentError("the model said \ud800 and \x00")
        if type(self).prompts > 2:
            yield Reply("plain again")
            return
        self.state = {"note": "nul\x00here", "n": float("inf"), "big": 2**70, "ok": 1}
        yield ReplyChunk("lone \ud800 ")
        yield ReplyChunk("chunk\x00")
        yield Step("thought\x00", "thinking \udfff")
        yield ToolCall(
            name="measure\x00",
            arguments={"big": 2**70, "nan": math.nan, "key\ud800": "v"},
            result={"inf": math.inf},
            error="oops \x00",
        )
        yield Reply("lone \ud800 surrogate and \x00 NUL")


async def test_agent_output_is_mended_everywhere_the_host_commits_it(
    make_scene: MakeScene,
) -> None:
    Mangler.prompts = 0
    async with make_scene([role("mangler")], agents={"mangler": Mangler}) as scene:
        drafts: list[Draft] = []
        scene.host.watch_drafts(drafts.append)
        thread = await scene.conversation("person:ann", "role:mangler")
        await scene.say(thread, "person:ann", "hello")

        assert await scene.replies(thread, "role:mangler", 1) == ["lone \ufffd surrogate and  NUL"]
        assert [d.text for d in drafts if d.kind is DraftKind.CHUNK] == ["lone \ufffd ", "chunk"]
        run = await scene.run_of(thread)
        assert run.status is RunStatus.READY
        assert run.session.state == {"note": "nulhere", "n": None, "big": None, "ok": 1}
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.REPLIED
        assert turn.attempts[0].error == "AgentError: the model said \ufffd and "
        steps = list(turn.steps)
        assert {"kind": "thought", "text": "thinking \ufffd"} in steps
        [call] = [s for s in steps if s["kind"] == "tool_call"]
        assert call["name"] == "measure"
        assert call["arguments"] == {"big": None, "nan": None, "key\ufffd": "v"}
        assert call["result"] == {"inf": None} and call["error"] == "oops "
        notes = [s["text"] for s in steps if s["kind"] == "mended"]
        assert len(notes) == 2  # the attempt's output, and the session's state
        assert "step 1 holds a NUL character" in notes[0]
        assert "tool call 'measure\\x00'" in notes[0]
        assert "reply 1 holds a lone surrogate (U+D800)" in notes[0]
        assert "the session's state" in notes[1]

        # The mended state is what the session resumes from; the next turn answers.
        await scene.say(thread, "person:ann", "again")
        assert (await scene.replies(thread, "role:mangler", 2))[-1] == "plain again"


def test_nothing_to_mend_leaves_values_as_they_are_and_notes_nothing() -> None:
    mending = Mending()
    text = "fine \u00e9\U0001f600"
    assert mending.text(text, "reply 1") is text
    value = {"a": [1, 2.5, "b"], "c": None}
    assert mending.value(value, "state") == value
    assert mending.step() is None
