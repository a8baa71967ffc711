"""A model behind the `openai` runtime (the fake chat-completions server on loopback) that
answers with text storage cannot hold — a lone surrogate and a NUL, as JSON escapes — streamed or
whole: the reply is posted mended and noted, the session's history (its stored state) is mended
too, and the next turn answers. On SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

from core.model.runs.run import RunStatus, TurnOutcome
from tests.runtimes.fake_openai import FakeOpenAI, say
from tests.runtimes.test_openai_runtime import ANN, fake, hosted, model_role

__all__ = ["fake"]  # the fixture, used by name


@pytest.mark.parametrize("stream", [True, False])
async def test_a_models_reply_that_breaks_the_rule_is_mended_and_the_next_turn_answers(
    fake: FakeOpenAI, database_url: str, stream: bool
) -> None:
    fake.script(say("lone \ud800 and a NUL \x00 here"), say("plain"))
    async with hosted(database_url, model_role(fake, runtime={"stream": stream})) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "hello")
        assert await scene.replies(thread, "role:model", 1) == ["lone \ufffd and a NUL  here"]
        run = await scene.run_of(thread)
        [turn] = await scene.db.runs.turns(run.id)
        assert turn.outcome is TurnOutcome.REPLIED
        notes = [s["text"] for s in turn.steps if s["kind"] == "mended"]
        assert any("reply 1 holds a lone surrogate (U+D800)" in n for n in notes)
        stored = json.dumps((await scene.db.runs.get(run.id)).session.state)
        assert "\\ud800" not in stored and "\\u0000" not in stored

        await scene.say(thread, ANN, "again")
        assert (await scene.replies(thread, "role:model", 2))[-1] == "plain"
        assert (await scene.db.runs.get(run.id)).status is RunStatus.READY
