"""What an attempt that raises leaves (pure, no host): the steps it streamed until then, mended,
gathered where the host still holds them, closed with the same notes a successful attempt's get;
and the note that ends a failed or cancelled attempt's steps, in its stored shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from core.engine.host.attempt import Collected, collect
from core.engine.host.transcript import AttemptEnded, Transcript
from core.engine.runtimes.base import AgentError, Prompt, Step, ToolCall, TurnTools, Update
from core.engine.tools import ToolBudget
from core.model.runs.run import TurnCause, TurnOutcome
from tests.unit.test_host_transcript import _Scripted

AT = datetime(2026, 12, 1, 12, tzinfo=UTC)
PROMPT = Prompt(role="worker", instructions="", news=(), pending=0)


class _Breaking(_Scripted):
    """A session that streams its updates, then raises (as a runtime signals a failed turn)."""

    id = "breaking"

    async def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        async for update in super().prompt(prompt, tools):
            yield update
        raise AgentError("broke")


async def test_an_attempt_that_raises_keeps_its_steps_mended_and_closed_with_its_notes() -> None:
    session = _Breaking(Step("thought", "nul\x00"), ToolCall("store", {"a": 1}, result={"id": "x"}))
    budget = ToolBudget(1)
    budget.refused = 1
    did = Collected()
    tools = cast(TurnTools, None)  # the session calls no tool
    with pytest.raises(AgentError):
        await collect(session, PROMPT, tools, budget, lambda kind, text: None, into=did)
    assert not did.closed  # the host closes it, however the attempt ended

    await did.close(budget)
    await did.close(budget)  # once
    steps = _record(tuple(did.steps), error="AgentError: broke")
    assert [s["kind"] for s in steps] == ["thought", "tool_call", "mended", "limit"]
    assert steps[0]["text"] == "nul"
    assert steps[1]["result"] == {"id": "x"}


def test_the_note_ending_an_attempt_says_how_it_ended() -> None:
    failed = AttemptEnded(number=1, error="AgentError: broke")
    cancelled = AttemptEnded(number=2, error=None)
    assert _record((failed, cancelled), error="AgentError: broke") == [
        {"kind": "attempt", "text": "attempt 1 failed: AgentError: broke"},
        {"kind": "attempt", "text": "attempt 2 was cancelled by an operator"},
    ]


def _record(steps: tuple[Any, ...], *, error: str | None) -> list[dict[str, Any]]:
    transcript = Transcript(
        session_id="s1",
        cause=TurnCause.MESSAGE,
        outcome=TurnOutcome.FAILED,
        queued_at=AT,
        started_at=AT,
        finished_at=AT,
        prompt=PROMPT,
        steps=steps,
        attempts=(),
        error=error,
    )
    return [dict(step) for step in transcript.record().steps]
