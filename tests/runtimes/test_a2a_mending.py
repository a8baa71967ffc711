"""A remote A2A agent (the real a2a-sdk server in `a2a_agent.py`) whose answer holds a NUL —
valid JSON and protobuf, but no backend's text: the reply is posted without it, the turn's
transcript says what was mended, and the turn is a reply, streamed or not.

(A lone surrogate cannot come this way: the a2a-sdk client parses every answer into protobuf,
which refuses it before the runtime sees it, so such an answer fails its attempt.)"""

from __future__ import annotations

import pytest

from gateway.settings import Settings
from tests.runtimes.a2a_agent import serve_agent
from tests.runtimes.test_a2a_runtime import ANN, gateway, remote, replies, run_of, settings, turns

__all__ = ["settings"]  # the fixture, used by name


@pytest.mark.parametrize("streaming", [True, False])
async def test_an_answer_holding_a_nul_is_mended_and_noted(
    settings: Settings, streaming: bool
) -> None:
    async with (
        serve_agent(streaming=streaming) as agent,
        gateway(settings, remote(agent.card_url)) as api,
    ):
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "say a nul")
        assert await replies(api, thread["id"], 1) == ["a NUL  here"]
        run = await run_of(api, thread["id"])
        [turn] = await turns(api, run["id"])
        assert turn["outcome"] == "replied"
        [note] = [s["text"] for s in turn["steps"] if s["kind"] == "mended"]
        assert "reply 1 holds a NUL character" in note
