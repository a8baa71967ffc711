"""What one attempt at a turn leaves: the session prompted, its updates made transcript steps.

A session streams updates (`core.engine.runtimes.base.Update`) as its agent works. Replies and
the pieces of a reply being written (drafts, never stored: `core.engine.host.drafts`) are told
as they come; the whole replies, the steps and the tool calls become the transcript's steps
(`core.engine.host.transcript`), all of it mended to obey `core.model.values`' rule as it comes
(`core.engine.host.mending`); the last steps note what was mended and the tool calls refused for
the turn's budget.

The steps are gathered in a `Collected` that outlives the attempt: one that fails, times out or
is cancelled keeps what its agent did until then — tool calls whose effects stay among it — for
the turn's transcript, with the same closing notes (`Collected.close`).

Traced (`core.tracing`), the agent's work is a `rolecall.agent` span — each tool call it reports
an event of it (`rolecall.tool_call`: name, outcome) — and a reply written piece by piece a
`rolecall.agent.stream` span, from its first piece to the whole reply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from opentelemetry.trace import Span

from core import tracing
from core.engine.host.drafts import DraftKind
from core.engine.host.mending import Mending
from core.engine.host.transcript import ToolsRefused, TranscriptStep
from core.engine.runtimes.base import (
    AgentSession,
    Prompt,
    Reply,
    ReplyChunk,
    Step,
    ToolCall,
    TurnTools,
)
from core.engine.tools import ToolBudget
from core.model.values import clean_text


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempted:
    """What an attempt that succeeded leaves."""

    session: AgentSession
    steps: tuple[TranscriptStep, ...]
    replies: tuple[str, ...]
    """The agent's answer: what it said through the turn, in order (mended)."""


@dataclass(slots=True)
class Collected:
    """What one attempt has done so far: its steps and replies, mended, as they came."""

    steps: list[TranscriptStep] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    mending: Mending = field(default_factory=Mending)
    closed: bool = False
    """The closing notes are among the steps (`close`)."""

    async def close(self, budget: ToolBudget | None) -> None:
        """End the attempt's steps, once, with the host's notes: what was mended, and the tool
        calls `budget` refused wherever they landed."""
        if self.closed:
            return
        self.closed = True
        if (note := self.mending.step()) is not None:
            self.steps.append(note)
        if budget is not None and await budget.refusals():
            self.steps.append(ToolsRefused(refused=budget.refused, limit=budget.limit))


async def collect(
    session: AgentSession,
    prompt: Prompt,
    tools: TurnTools,
    budget: ToolBudget,
    draft: Callable[[DraftKind, str], None],
    *,
    into: Collected | None = None,
) -> Attempted:
    """Everything the agent does in one attempt: `session` prompted with `prompt` (the pieces of
    a reply being written go to `draft`, not to the transcript), gathered `into` as it comes —
    so that what an attempt that raises did is still there."""
    got = into if into is not None else Collected()
    steps, replies, mending = got.steps, got.replies, got.mending
    drafting: Span | None = None
    """While a reply is written piece by piece: its `rolecall.agent.stream` span."""
    with tracing.span("rolecall.agent") as agent:
        try:
            async for update in session.prompt(prompt, tools):
                if isinstance(update, ReplyChunk):
                    if update.text:
                        drafting = drafting or tracing.start("rolecall.agent.stream")
                        draft(DraftKind.CHUNK, clean_text(update.text))  # its Reply's note says it
                elif isinstance(update, Reply):
                    if drafting is not None:
                        draft(DraftKind.END, "")
                        drafting.end()
                        drafting = None
                    text = mending.text(update.text, f"reply {len(replies) + 1}")
                    replies.append(text)
                    steps.append(Reply(text))
                elif isinstance(update, Step):
                    where = f"step {len(steps) + 1}"
                    kind, text = mending.text(update.kind, where), mending.text(update.text, where)
                    steps.append(Step(kind, text))
                elif isinstance(update, ToolCall):
                    # mended as one value: one note for the call, whichever part had to be
                    name, arguments, result, error = mending.value(
                        [update.name, dict(update.arguments), update.result, update.error],
                        f"tool call {update.name!r} (step {len(steps) + 1})",
                    )
                    steps.append(ToolCall(name, arguments, result=result, error=error))
                    agent.add_event("rolecall.tool_call", _tool_call(name, error))
        finally:
            if drafting is not None:  # the attempt ended while a reply was being written
                drafting.end()
        agent.set_attribute("rolecall.replies", len(replies))
    await got.close(budget)
    return Attempted(session=session, steps=tuple(steps), replies=tuple(replies))


def _tool_call(name: object, error: object) -> dict[str, str]:
    """A tool call's event on the agent's span: its name, and whether it failed."""
    return {"rolecall.tool.name": str(name), "rolecall.tool.outcome": "error" if error else "ok"}
