"""The run host's typed transcript: every step kind, an attempt and a whole turn's record made the
stored JSON in its one shape (`Transcript.record`), and an attempt's updates made typed steps —
mended as agent output is — that store as the transcript always has."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from core.engine.host.attempt import collect
from core.engine.host.drafts import DraftKind
from core.engine.host.transcript import (
    Attempt,
    Mended,
    NotStored,
    ToolsRefused,
    Transcript,
    TranscriptStep,
)
from core.engine.runtimes.base import Prompt, Reply, ReplyChunk, Step, ToolCall, TurnTools, Update
from core.engine.tools import ToolBudget
from core.model.runs.run import TurnCause, TurnOutcome

AT = datetime(2026, 12, 1, 12, tzinfo=UTC)
EPOCH_MICROS = int(AT.timestamp()) * 1_000_000
PROMPT = Prompt(role="echo", instructions="", news=(), pending=0)


def _transcript(steps: tuple[TranscriptStep, ...], **changes: Any) -> Transcript:
    made = Transcript(
        session_id="s1",
        cause=TurnCause.MESSAGE,
        outcome=TurnOutcome.REPLIED,
        queued_at=AT,
        started_at=AT + timedelta(microseconds=1),
        finished_at=AT + timedelta(microseconds=5),
        prompt=PROMPT,
        steps=steps,
        attempts=(Attempt(started_at=AT, finished_at=AT + timedelta(seconds=1), error=None),),
        error=None,
    )
    return replace(made, **changes)


def test_every_step_kind_is_stored_in_its_shape() -> None:
    steps: tuple[TranscriptStep, ...] = (
        Reply("hello"),
        Step("thought", "answering message 1"),
        ToolCall("recall", {"where": {"kind": "note"}}, result=2),
        ToolCall("store", {}, error="refused"),
        ToolsRefused(refused=2, limit=3),
        Mended(notes=("reply 1 holds a NUL character at character 2", "step 2 x")),
        NotStored(why="the turn's end could not be stored: Boom: no"),
    )
    assert _transcript(steps).record().steps == [
        {"kind": "reply", "text": "hello"},
        {"kind": "thought", "text": "answering message 1"},
        {
            "kind": "tool_call",
            "name": "recall",
            "arguments": {"where": {"kind": "note"}},
            "result": 2,
            "error": None,
        },
        {"kind": "tool_call", "name": "store", "arguments": {}, "result": None, "error": "refused"},
        {
            "kind": "limit",
            "text": "2 tool call(s) refused: the role allows 3 a turn (max_tool_calls_per_turn)",
        },
        {
            "kind": "mended",
            "text": "the agent's output broke the rule of acceptable values and was mended "
            "(lone surrogates became U+FFFD, NULs were dropped, numbers storage cannot hold "
            "became null): reply 1 holds a NUL character at character 2; step 2 x",
        },
        {"kind": "error", "text": "the turn's end could not be stored: Boom: no"},
    ]


def test_a_record_holds_the_times_in_microseconds_the_prompt_and_every_attempt() -> None:
    record = _transcript((Reply("hi"),)).record()
    assert (record.session_id, record.cause, record.outcome) == (
        "s1",
        TurnCause.MESSAGE,
        TurnOutcome.REPLIED,
    )
    assert (record.queued_at, record.started_at, record.finished_at) == (
        EPOCH_MICROS,
        EPOCH_MICROS + 1,
        EPOCH_MICROS + 5,
    )
    assert record.prompt == PROMPT.to_json()
    assert record.attempts == [
        {"started_at": EPOCH_MICROS, "finished_at": EPOCH_MICROS + 1_000_000, "error": None}
    ]
    failed = Attempt(started_at=AT, finished_at=AT, error="AgentError: no")
    record = _transcript((), attempts=(failed, failed), error="AgentError: no").record()
    assert record.error == "AgentError: no"
    assert record.attempts == 2 * [
        {"started_at": EPOCH_MICROS, "finished_at": EPOCH_MICROS, "error": "AgentError: no"}
    ]


def test_an_end_that_was_not_stored_keeps_only_why_and_the_attempts() -> None:
    why = "the turn's end could not be stored: IntegrityError: no"
    record = _transcript((Reply("lost"), Step("thought", "x"))).unstored(why).record()
    assert record.outcome is TurnOutcome.FAILED
    assert record.prompt == {}
    assert record.steps == [{"kind": "error", "text": why}]
    assert record.error == why
    assert len(record.attempts) == 1


class _Scripted:
    """A session that streams the updates it is given (what a runtime streams)."""

    id = "scripted"

    def __init__(self, *updates: Update) -> None:
        self._updates = updates

    async def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        for update in self._updates:
            yield update

    async def cancel(self) -> None:
        pass

    def snapshot(self) -> Mapping[str, Any]:
        return {}

    async def close(self) -> None:
        pass


async def test_an_attempts_updates_become_typed_steps_mended_and_stored_in_their_shape() -> None:
    session = _Scripted(
        Step("thought", "nul\x00here"),
        ReplyChunk("hel"),
        ReplyChunk(""),
        Reply("hello \ud800"),
        ToolCall("measure\x00", {"size": 2**70, "ok": [1.5, "fine"]}, result=(1, 2)),
    )
    budget = ToolBudget(1)
    budget.refused = 2  # as the tools count what they refused during the attempt
    drafts: list[tuple[DraftKind, str]] = []
    tools = cast(TurnTools, None)  # the scripted session calls no tool
    attempted = await collect(session, PROMPT, tools, budget, lambda k, t: drafts.append((k, t)))

    assert attempted.replies == ("hello \ufffd",)
    assert drafts == [(DraftKind.CHUNK, "hel"), (DraftKind.END, "")]
    assert all(not isinstance(step, dict) for step in attempted.steps)
    assert _transcript(attempted.steps).record().steps == [
        {"kind": "thought", "text": "nulhere"},
        {"kind": "reply", "text": "hello \ufffd"},
        {
            "kind": "tool_call",
            "name": "measure",
            "arguments": {"size": None, "ok": [1.5, "fine"]},
            "result": [1, 2],
            "error": None,
        },
        {
            "kind": "mended",
            "text": "the agent's output broke the rule of acceptable values and was mended "
            "(lone surrogates became U+FFFD, NULs were dropped, numbers storage cannot hold "
            "became null): step 1 holds a NUL character (U+0000); reply 1 holds a lone "
            "surrogate (U+D800) at character 6, which is not a Unicode character; tool call "
            "'measure\\x00' (step 3) held text or numbers storage cannot hold",
        },
        {
            "kind": "limit",
            "text": "2 tool call(s) refused: the role allows 1 a turn (max_tool_calls_per_turn)",
        },
    ]
