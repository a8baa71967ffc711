"""A turn's transcript, typed: what the run host observed of one turn, as frozen values.

The steps are what the agent did in every attempt at the turn, attempt after attempt, in the
order it did them — its replies (`Reply`), anything else worth the transcript (`Step`: thoughts,
plans, statuses…) and its tool calls (`ToolCall`), as its runtime streamed them
(`core.engine.runtimes.base`), mended — each attempt's followed by what the host notes of it:
what had to be mended (`Mended`), the tool calls refused for the turn's budget (`ToolsRefused`).
An attempt that failed or was cancelled keeps what it did before it ended (the effects of its
tool calls stay), and its steps end with a note of how it ended (`AttemptEnded`), so the notes
split the steps by attempt; the attempt that succeeded comes last, with no such note, and a
second `Mended` when the session's state had to be. A turn whose end could not be stored keeps a
single step saying why (`NotStored`): storage refused something the agent did.

`Transcript.record` makes it the stored JSON — the one place that knows the stored shape — as
the turn's end is handed to storage (`core.storage.runs_commands.TurnRecord`):

    {"kind": "reply", "text"}                       Reply
    {"kind": <its kind>, "text"}                    Step
    {"kind": "tool_call", "name", "arguments", "result", "error"}
    {"kind": "limit", "text"}                       ToolsRefused
    {"kind": "mended", "text"}                      Mended
    {"kind": "attempt", "text"}                     AttemptEnded
    {"kind": "error", "text"}                       NotStored
    attempts: {"started_at", "finished_at", "error", "trace_id"?}   (times in microseconds)

`trace_id` (in hex) is the OpenTelemetry trace the turn ran in, when it was traced and sampled
(`core.tracing`); it is kept with each attempt, which is a span of that trace, and read back as
the turn's (`core.storage.runs_reads`).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from core.engine.runtimes.base import Reply, Step, ToolCall
from core.model.runs.prompt import Prompt
from core.model.runs.run import TurnCause, TurnOutcome
from core.storage.rows import to_micros
from core.storage.runs_store import TurnRecord

MENDED_PREFACE = (
    "the agent's output broke the rule of acceptable values and was mended "
    "(lone surrogates became U+FFFD, NULs were dropped, numbers storage cannot hold "
    "became null): "
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsRefused:
    """Tool calls refused because the turn had spent the role's `max_tool_calls_per_turn`."""

    refused: int
    limit: int

    @property
    def text(self) -> str:
        return (
            f"{self.refused} tool call(s) refused: the role allows "
            f"{self.limit} a turn (max_tool_calls_per_turn)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Mended:
    """What of the agent's output had to be mended to be stored (`core.engine.host.mending`)."""

    notes: tuple[str, ...]

    @property
    def text(self) -> str:
        return MENDED_PREFACE + "; ".join(self.notes)


@dataclass(frozen=True, slots=True, kw_only=True)
class NotStored:
    """Why the turn's end could not be stored (it was stored as failed, without the agent's
    output)."""

    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptEnded:
    """How an attempt that did not succeed ended: the steps since the previous such note (or
    the first) are that attempt's. `number` counts from 1; `error`: why it failed, None for one
    an operator cancelled."""

    number: int
    error: str | None

    @property
    def text(self) -> str:
        if self.error is None:
            return f"attempt {self.number} was cancelled by an operator"
        return f"attempt {self.number} failed: {self.error}"


TranscriptStep = Reply | Step | ToolCall | ToolsRefused | Mended | AttemptEnded | NotStored


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One attempt at the turn: when it began (when it ended, for one cancelled before it
    began) and ended, and its error (None: it succeeded)."""

    started_at: datetime
    finished_at: datetime
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """A finished turn as the host observed it."""

    session_id: str
    cause: TurnCause
    outcome: TurnOutcome
    queued_at: datetime
    started_at: datetime
    finished_at: datetime
    prompt: Prompt | None
    """As the last attempt told it; None when it is left out (`unstored`)."""
    steps: Sequence[TranscriptStep]
    attempts: Sequence[Attempt]
    error: str | None
    trace_id: str | None = None
    """The trace the turn ran in (None: not traced, or not sampled)."""

    def unstored(self, why: str) -> Transcript:
        """The transcript of a turn whose end could not be stored, to store as failed: none of
        what the agent said or did (what storage refused is among it), the attempts, and why."""
        return replace(
            self, outcome=TurnOutcome.FAILED, prompt=None, steps=(NotStored(why=why),), error=why
        )

    def record(self) -> TurnRecord:
        """The turn's record as storage takes it: JSON-ready, in the stored shape."""
        return TurnRecord(
            session_id=self.session_id,
            cause=self.cause,
            outcome=self.outcome,
            queued_at=to_micros(self.queued_at),
            started_at=to_micros(self.started_at),
            finished_at=to_micros(self.finished_at),
            prompt=self.prompt.to_json() if self.prompt is not None else {},
            steps=[_step_json(step) for step in self.steps],
            attempts=[
                {
                    "started_at": to_micros(attempt.started_at),
                    "finished_at": to_micros(attempt.finished_at),
                    "error": attempt.error,
                    **({"trace_id": self.trace_id} if self.trace_id is not None else {}),
                }
                for attempt in self.attempts
            ],
            error=self.error,
        )


def _step_json(step: TranscriptStep) -> dict[str, Any]:
    match step:
        case Reply(text=text):
            return {"kind": "reply", "text": text}
        case Step(kind=kind, text=text):
            return {"kind": kind, "text": text}
        case ToolCall():
            return {
                "kind": "tool_call",
                "name": step.name,
                "arguments": dict(step.arguments),
                "result": step.result,
                "error": step.error,
            }
        case ToolsRefused():
            return {"kind": "limit", "text": step.text}
        case Mended():
            return {"kind": "mended", "text": step.text}
        case AttemptEnded():
            return {"kind": "attempt", "text": step.text}
        case NotStored(why=why):
            return {"kind": "error", "text": why}
