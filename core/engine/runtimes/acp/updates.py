"""What one prompt's `session/update` notifications amount to (pure): the turn's updates as the
host takes them.

- **Agent message chunks** are the reply being written: each piece is a `ReplyChunk` at once,
  and at the prompt's end the whole text is one `Reply`. Pieces of different messages (a new
  `messageId`, or text after a tool call) are joined by a blank line.
- **Thought chunks** gather into one `thought` step until something else comes.
- **A plan** is a `plan` step: its entries one a line, each with its status.
- **A tool call** becomes a `ToolCall` when it ends (completed or failed), with its input, its
  output and, when it failed, its error; a call still open at the prompt's end is recorded with
  the error "not finished".
- Everything else (the person's own words replayed by `session/load`, available commands,
  modes, usage) is not the transcript's business.
- **A prompt that fails** before its end (the process dies, the agent answers with an error)
  leaves what it had begun (`unfinished`): the last thought, the calls still open (error "not
  finished"), and the reply it was writing as a `draft` step — never posted.

Transcript texts are cut at `STEP_TEXT` characters. A reply longer than a message may be is the
turn's failure (`AgentError`): the agent misbehaves, and nothing half-said is posted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from core.engine.runtimes.acp.policy import names_in
from core.engine.runtimes.base import AgentError, Reply, ReplyChunk, Step, ToolCall, Update
from core.model.timeline import MAX_TEXT_LENGTH

STEP_TEXT = 20_000
"""Characters of one transcript text (a thought, a tool's input or output) kept."""

_ENDED = ("completed", "failed")


def cut(text: str, limit: int = STEP_TEXT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


@dataclass(slots=True)
class _OpenCall:
    title: str = ""
    kind: str | None = None
    names: tuple[str, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    content: list[str] = field(default_factory=list)
    status: str | None = None

    def ended(self) -> ToolCall:
        result = self.raw_output if self.raw_output is not None else "\n".join(self.content)
        result = _bounded(result) if result not in ("", None) else None
        error = None
        if self.status == "failed":
            error = cut(result if isinstance(result, str) else json.dumps(result)) or "failed"
            result = None
        elif self.status not in _ENDED:
            error = f"not finished (status {self.status or 'pending'})"
        name = self.names[0] if self.names else self.title or self.kind or "tool"
        return ToolCall(name=name, arguments=_arguments(self.raw_input), result=result, error=error)


class TurnLog:
    """The updates of one prompt, as they come (`take`) and at its end (`end`)."""

    def __init__(self, *, max_reply: int = MAX_TEXT_LENGTH) -> None:
        self._max_reply = max_reply
        self._reply: list[str] = []
        self._size = 0
        self._message_id: str | None = None
        self._broken = False
        self._thought: list[str] = []
        self._calls: dict[str, _OpenCall] = {}

    def take(self, update: Any) -> list[Update]:
        if isinstance(update, AgentThoughtChunk):
            if isinstance(update.content, TextContentBlock):
                self._thought.append(update.content.text)
            return []
        out = self._thought_step()
        if isinstance(update, AgentMessageChunk):
            out.extend(self._say(update))
        elif isinstance(update, AgentPlanUpdate):
            lines = [f"[{entry.status}] {entry.content}" for entry in update.entries]
            out.append(Step("plan", cut("\n".join(lines))))
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            out.extend(self._tool(update))
        return out

    def end(self, stop_reason: str | None = None) -> list[Update]:
        """What is left when the prompt ends: the last thought, calls still open, a stop that
        was not the plain end of the turn, and the whole reply."""
        out = self._thought_step()
        out.extend(call.ended() for call in self._calls.values())
        self._calls.clear()
        if stop_reason not in (None, "end_turn"):
            out.append(Step("stop", f"the agent stopped: {stop_reason}"))
        text = "".join(self._reply).strip()
        if text:
            out.append(Reply(text))
        return out

    def unfinished(self) -> list[Update]:
        """What is left when the prompt fails: the last thought, the calls still open, and
        the reply being written, as a `draft` step (a failed turn posts nothing)."""
        out = self._thought_step()
        out.extend(call.ended() for call in self._calls.values())
        self._calls.clear()
        text = "".join(self._reply).strip()
        if text:
            out.append(Step("draft", cut(text)))
        self._reply.clear()
        return out

    def _thought_step(self) -> list[Update]:
        if not self._thought:
            return []
        text, self._thought = "".join(self._thought), []
        return [Step("thought", cut(text))] if text.strip() else []

    def _say(self, chunk: AgentMessageChunk) -> list[Update]:
        if not isinstance(chunk.content, TextContentBlock):
            return [Step("content", f"the agent wrote a {chunk.content.type} block (not posted)")]
        another = self._message_id is not None and chunk.message_id not in (None, self._message_id)
        apart = bool(self._reply) and (self._broken or another)
        self._message_id = chunk.message_id or self._message_id
        self._broken = False
        piece = ("\n\n" if apart else "") + chunk.content.text
        self._size += len(piece)
        if self._size > self._max_reply:
            raise AgentError(
                f"the agent's reply grew past {self._max_reply} characters, the most a message "
                "may hold"
            )
        self._reply.append(piece)
        return [ReplyChunk(piece)] if piece else []

    def _tool(self, update: ToolCallStart | ToolCallProgress) -> list[Update]:
        call = self._calls.setdefault(update.tool_call_id, _OpenCall())
        if self._reply:
            self._broken = True
        call.title = update.title or call.title
        call.kind = update.kind or call.kind
        call.names = names_in(update.field_meta) or call.names
        call.status = update.status or call.status
        if update.raw_input is not None:
            call.raw_input = update.raw_input
        if update.raw_output is not None:
            call.raw_output = update.raw_output
        if update.content is not None:
            call.content = [_content_text(item) for item in update.content]
        if call.status in _ENDED:
            del self._calls[update.tool_call_id]
            return [call.ended()]
        return []


def _content_text(
    item: ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent,
) -> str:
    if isinstance(item, FileEditToolCallContent):
        return f"edited {item.path}"
    if isinstance(item, TerminalToolCallContent):
        return f"terminal {item.terminal_id}"
    block = item.content
    return block.text if isinstance(block, TextContentBlock) else f"({block.type})"


def _bounded(value: Any) -> Any:
    """`value` for the transcript: itself, or cut to a string when it is too long."""
    if isinstance(value, str):
        return cut(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return cut(repr(value))
    return value if len(text) <= STEP_TEXT else cut(text)


def _arguments(raw: Any) -> Mapping[str, Any]:
    if raw is None:
        return {}
    bounded = _bounded(raw)
    return dict(bounded) if isinstance(bounded, Mapping) else {"input": bounded}
