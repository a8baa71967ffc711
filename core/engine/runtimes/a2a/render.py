"""A turn's `Prompt` as the text parts of one A2A message (pure).

A remote agent reads plain text: who said what, numbered by the conversation's `seq`; how many
people's messages wait for an answer; the task news as one digest; and, on a session's opening
turn, the role's instructions, the conversation so far and the tasks it follows. Each of these
is one text part, in that order, so an agent that reads only the last part still gets the news.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.runtimes.base import Prompt, PromptEvent
from core.engine.runtimes.render import event_line


def render(prompt: Prompt) -> list[str]:
    """The message's text parts; never empty."""
    parts: list[str] = []
    if prompt.opening:
        if prompt.instructions.strip():
            parts.append(f"Your instructions as role:{prompt.role}:\n{prompt.instructions.strip()}")
        if prompt.recent:
            parts.append(_lines("The conversation so far:", prompt.recent))
        if prompt.subscribed:
            followed = "\n".join(f"- {_task_line(task)}" for task in prompt.subscribed)
            parts.append(f"Tasks this conversation follows:\n{followed}")
    if prompt.task is not None:
        parts.append(_the_task(prompt.task))
    if prompt.tasks:
        parts.append(_digest(prompt.tasks))
    if prompt.news:
        parts.append(_news(prompt))
    if not parts:
        parts.append("Nothing new in the conversation.")
    return parts


def _lines(title: str, events: Sequence[PromptEvent]) -> str:
    return "\n".join([title, *(event_line(e) for e in events)])


def _news(prompt: Prompt) -> str:
    text = _lines("New in the conversation:", prompt.news)
    if prompt.pending == 1:
        text += "\n\n1 message waits for your answer."
    elif prompt.pending:
        text += f"\n\n{prompt.pending} messages wait for your answer."
    if prompt.more:
        text += "\nMore news follows in the next turn."
    return text


def _task_line(task: Mapping[str, Any]) -> str:
    assignee = task.get("assignee")
    assigned = f", assigned to {assignee}" if assignee else ""
    return f"{task.get('title')} [{task.get('status')}{assigned}] (task {task.get('id')})"


def _the_task(task: Mapping[str, Any]) -> str:
    body = task.get("body")
    return f"The task you work on: {_task_line(task)}" + (f"\n{body}" if body else "")


def _digest(tasks: Sequence[Mapping[str, Any]]) -> str:
    lines = ["Task news:"]
    for task in tasks:
        lines.append(f"- {_task_line(task)}")
        for event in task.get("events", ()):
            changes = event.get("changes") or {}
            changed = ", ".join(_change(name, value) for name, value in changes.items())
            said = event.get("text")
            detail = "; ".join(piece for piece in (changed, said) if piece)
            line = f"  #{event.get('seq')} {event.get('kind')} by {event.get('by')}"
            lines.append(f"{line}: {detail}" if detail else line)
    return "\n".join(lines)


def _change(name: str, value: Any) -> str:
    """`status: open -> done` for an update, `title: …` for a field set at creation."""
    if isinstance(value, Mapping) and set(value) == {"from", "to"}:
        return f"{name}: {value['from']} -> {value['to']}"
    return f"{name}: {value}"
