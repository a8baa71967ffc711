"""Agents that misbehave, as real processes (`fake_acp_agent.py` behind the whole gateway on
loopback): one that hangs, one that floods its output, one that writes values storage cannot
hold. Each turn times out, fails cleanly or is mended — and the conversation's next turn works.
(An agent that exits mid-turn: `test_acp_runtime.test_an_agent_that_dies_mid_turn_…`.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runtimes.test_acp_runtime import Scene, _failed, fake, serving


async def _next_turn_answers(scene: Scene, thread: str, number: int) -> None:
    """The conversation's next message is answered by a fresh agent process."""
    await scene.api.say(thread, "person:ann", "say still here")
    turn = await scene.turn(thread, number)
    assert turn["outcome"] == "replied", turn
    assert (await scene.said_by(thread, "role:fake"))[-1] == "still here"
    assert (await scene.run(thread))["status"] == "ready"


async def test_an_agent_that_hangs_times_out_and_the_next_turn_works(tmp_path: Path) -> None:
    async with serving(tmp_path, fake(turn_timeout=4.0)) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "hang")
        turn = await _failed(scene, thread)  # every hung process was stopped
        assert all("turn_timeout" in a["error"] for a in turn["attempts"])
        await _next_turn_answers(scene, thread, 2)


async def test_an_agent_that_floods_its_reply_fails_cleanly_and_the_next_turn_works(
    tmp_path: Path,
) -> None:
    """Ten thousand reply chunks at once (60,000 characters, past the most a message holds):
    the attempt fails saying so, the process is stopped, nothing is posted."""
    async with serving(tmp_path, fake()) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "flood 10000")
        turn = await _failed(scene, thread)
        assert all("reply grew past 40000 characters" in a["error"] for a in turn["attempts"])
        assert await scene.said_by(thread, "role:fake") == []
        await _next_turn_answers(scene, thread, 2)


async def test_an_agent_that_floods_its_stderr_still_answers(tmp_path: Path) -> None:
    """Two megabytes on stderr (a pipe holds 64 KiB): read as it comes, so the agent is never
    blocked on it, and the turn answers."""
    async with serving(tmp_path, fake()) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", f"spew {2 * 1024 * 1024}")
        turn = await scene.turn(thread, 1)
        assert turn["outcome"] == "replied", turn
        assert await scene.said_by(thread, "role:fake") == ["spewed"]


def _mended(turn: dict[str, Any]) -> str:
    [step] = [s for s in turn["steps"] if s["kind"] == "mended"]
    text: str = step["text"]
    return text


async def test_agent_output_with_values_storage_cannot_hold_is_mended_and_noted(
    tmp_path: Path,
) -> None:
    """Lone surrogates, a NUL and an infinite number in the agent's reply, thought and tool
    call: the reply is posted mended (U+FFFD, the NUL dropped), the transcript holds the mended
    steps and a note of what was mended, and the turn is a reply, not a failure."""
    async with serving(tmp_path, fake()) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "mangle")
        turn = await scene.turn(thread, 1)
        assert turn["outcome"] == "replied", turn
        assert await scene.said_by(thread, "role:fake") == ["lone \ufffd surrogate and a NUL  here"]
        assert {"kind": "thought", "text": "thinking \ufffd hard"} in turn["steps"]
        [call] = [s for s in turn["steps"] if s["kind"] == "tool_call"]
        assert call["name"] == "Measure \ufffd"
        assert call["arguments"] == {"size": None, "name": "nul"}
        note = _mended(turn)
        assert "reply 1 holds a lone surrogate (U+D800)" in note
        assert "tool call" in note
        run = await scene.run(thread)
        assert run["status"] == "ready"
        await _next_turn_answers(scene, thread, 2)
