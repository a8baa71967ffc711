"""A session's history as chat messages: what the model is told, and what is kept of it.

The chat-completions API has no memory of its own: every request carries the whole
conversation. So the history lives in the session's state, in our database (`snapshot`), and
`resume` continues it after idle sleep. Its messages, as the API speaks them:

    system      the role's instructions and how the conversation is told — built afresh for
                every turn from the manifest, never stored (an edited manifest applies at once)
    user        one event of the conversation: `person:ann (#12): hello` with `name`
                `person_ann`; notes of the gateway (someone removed, task news) in [brackets]
    assistant   what the model said, and the tool calls it asked for
    tool        a tool call's result (or its error), by the call's id

An **exchange** is one turn's user messages and everything that answered them: the model's
messages, its tool calls and their results. The history is bounded — at most `max_messages`
messages and about `max_bytes` of JSON — by dropping the oldest whole exchanges, never part of
one (a `tool` message never outlives the call it answers); the newest exchange is always kept.
A session's opening turn (a fresh session: "start fresh", or the first one) is told the recent
conversation as messages of the history, the role's own messages as the assistant's.

Everything here is pure: values in, messages out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.runtimes.base import Prompt, PromptEvent
from core.engine.tools import TOOLS

ChatMessage = dict[str, Any]
"""One message of the chat-completions API (JSON values only)."""

STATE_FORMAT = 1
"""The shape of a session's state: `{"format": 1, "messages": [ChatMessage, …]}`."""

TOOL_RESULT_LIMIT = 16_000
"""Characters of a tool call's result the model is shown (and the history keeps)."""

CONVERSATION_ONLY = frozenset({"peek_pending", "send_message", "retract"})
"""Tools a run on a task does not have (it has no conversation)."""

_ROLES = frozenset({"user", "assistant", "tool"})
_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryLimits:
    max_messages: int = 200
    max_bytes: int = 100_000


def system_message(prompt: Prompt, *, display_name: str) -> ChatMessage:
    """The role's instructions, then how the gateway tells the conversation."""
    framing = (
        f"You are {display_name} (the role `role:{prompt.role}`) in a conversation hosted by a "
        "chat gateway. Each user message is one event of the conversation: a message starts "
        "with its author's address and number, like `person:ann (#12): hello`; notes from the "
        "gateway are in [brackets]. What you answer is posted in the conversation as your "
        "message; an empty answer says nothing. Your tools act in this conversation."
    )
    instructions = prompt.instructions.strip()
    content = f"{instructions}\n\n{framing}" if instructions else framing
    return {"role": "system", "content": content}


def turn_messages(prompt: Prompt, *, with_recent: bool) -> list[ChatMessage]:
    """What one turn adds to the history before the model answers: the recent conversation
    (`with_recent`: a fresh session's opening turn), the task it works on, the news in order,
    the task news as one digest."""
    own = f"role:{prompt.role}"
    messages: list[ChatMessage] = []
    if with_recent and prompt.opening:
        messages.extend(event_message(e, own=own) for e in prompt.recent)
        if prompt.subscribed:
            messages.append(_note("tasks this conversation watches", list(prompt.subscribed)))
    if prompt.task is not None:
        messages.append(_note("the task you work on, as it is now", dict(prompt.task)))
    messages.extend(event_message(e, own=own) for e in prompt.news)
    if prompt.tasks:
        messages.append(_note("news of the tasks this conversation watches", list(prompt.tasks)))
    if prompt.more:
        messages.append({"role": "user", "content": "[more news follows in your next turn]"})
    if not any(m["role"] == "user" for m in messages):
        messages.append({"role": "user", "content": "[nothing new]"})
    return messages


def event_message(event: PromptEvent, *, own: str) -> ChatMessage:
    """One event of the conversation as a chat message: the role's own messages are the
    assistant's; everyone else's, and everything else, the user's."""
    if event.kind == "message" and event.author == own:
        return {"role": "assistant", "content": event.text or ""}
    if event.kind == "message" and event.author is not None:
        mark = ", retracted" if event.retracted else ""
        return {
            "role": "user",
            "name": _NAME.sub("_", event.author)[:64],
            "content": f"{event.author} (#{event.seq}{mark}): {event.text or ''}",
        }
    if event.kind == "retraction":
        reason = f": {event.text}" if event.text else ""
        target = f"#{event.target_seq}" if event.target_seq is not None else "a message"
        return {"role": "user", "content": f"[{event.author} retracted {target}{reason}]"}
    if event.kind == "participant_state_changed":
        return {"role": "user", "content": f"[{event.participant} is now {event.state}]"}
    return {"role": "user", "content": f"[gateway: {event.text or event.kind}]"}


def _note(title: str, value: Any) -> ChatMessage:
    body = json.dumps(value, ensure_ascii=False, default=str)
    return {"role": "user", "content": f"[{title}]\n{body}"}


def tool_result_message(call_id: str, result: Any = None, error: str | None = None) -> ChatMessage:
    """A tool call's result (or error) as the model reads it, cut to `TOOL_RESULT_LIMIT`."""
    value = {"error": error} if error is not None else result
    return {"role": "tool", "tool_call_id": call_id, "content": cut(_json(value))}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def cut(text: str, limit: int = TOOL_RESULT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [cut: {len(text) - limit} more characters]"


def function_tools(*, on_task: bool) -> list[dict[str, Any]]:
    """Our tools (`core.engine.tools.TOOLS`) as the API's function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.input_schema),
            },
        }
        for tool in TOOLS.values()
        if not (on_task and tool.name in CONVERSATION_ONLY)
    ]


def bounded(messages: Sequence[ChatMessage], limits: HistoryLimits) -> list[ChatMessage]:
    """The newest whole exchanges within `limits` (the newest one always, whatever its size)."""
    groups = _exchanges(messages)
    sizes = [sum(len(_json(m).encode()) for m in group) for group in groups]
    count, size = len(messages), sum(sizes)
    first = 0
    while first < len(groups) - 1 and (count > limits.max_messages or size > limits.max_bytes):
        count -= len(groups[first])
        size -= sizes[first]
        first += 1
    return [m for group in groups[first:] for m in group]


def _exchanges(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Split at every user message that follows a message of another role."""
    groups: list[list[ChatMessage]] = []
    previous: str | None = None
    for message in messages:
        role = message.get("role")
        if not groups or (role == "user" and previous != "user"):
            groups.append([])
        groups[-1].append(message)
        previous = role
    return groups


def state_of(history: Sequence[ChatMessage]) -> dict[str, Any]:
    return {"format": STATE_FORMAT, "messages": [dict(m) for m in history]}


def history_of(state: Mapping[str, Any]) -> list[ChatMessage]:
    """The history kept in a session's state; none when the state is not one of ours (the
    role was backed by another kind of runtime before), so the session starts over."""
    messages = state.get("messages")
    if state.get("format") != STATE_FORMAT or not isinstance(messages, list):
        return []
    if not all(isinstance(m, dict) and m.get("role") in _ROLES for m in messages):
        return []
    return [dict(m) for m in messages]
