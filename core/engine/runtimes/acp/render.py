"""A turn's `Prompt` as the text of one ACP `session/prompt` (pure).

An ACP agent keeps its own context for as long as its session lasts, so a session's opening
prompt says everything once — who the agent is, the role's instructions, how this works (what
it writes is posted, its tools are on the MCP server `rolecall`, its directory is its own), the
conversation so far and the tasks it follows — and every later prompt says only what is new:
the news, one event a line numbered by the conversation's `seq` (`#12 [2026-11-30 08:24]
person:alice: …`), how many people's messages wait for an answer, and the task news as one
digest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.runtimes.base import Prompt, PromptEvent
from core.engine.runtimes.render import event_line

MCP_SERVER = "rolecall"
"""The name our MCP server has in the agent's session (Claude's adapter calls our tools
`mcp__rolecall__<tool>`)."""

_TOOLS = (
    "`recall` and `store` (your memory of this conversation), `send_message` (say something at "
    "once), `peek_pending` (messages that arrived while you work), `retract`, `subscribe` and "
    "`unsubscribe` (follow tasks), and `task_create`, `task_get`, `task_list`, `task_comment`, "
    "`task_update`"
)


def render(prompt: Prompt, *, display_name: str) -> str:
    parts: list[str] = []
    if prompt.opening:
        parts.extend(_opening(prompt, display_name))
    if prompt.task is not None:
        parts.append(_the_task(prompt.task))
    if prompt.news:
        parts.append(_lines("New in the conversation:", prompt.news))
    if prompt.tasks:
        on_it = prompt.task is not None
        parts.append(_digest(prompt.tasks, "What changed:" if on_it else "Task news:"))
    if prompt.task is None:
        parts.append(_waiting(prompt.pending))
    if prompt.more:
        parts.append("More news follows in your next prompt.")
    return "\n\n".join(parts)


def _opening(prompt: Prompt, display_name: str) -> list[str]:
    me = f"You are {display_name} (role:{prompt.role})"
    if prompt.task is not None:
        how = [
            f"{me}, an agent working on a task tracked in Rolecall. Each prompt brings the task "
            "as it is now and what changed on it.",
            "- What you write in answer is recorded on the task as your comment. When nothing "
            "needs saying, write nothing.",
            "- Your working directory belongs to this task and is kept between sessions.",
        ]
    else:
        how = [
            f"{me}, an agent in a conversation that people reach through Rolecall (a chat "
            "widget, Slack, …). Each prompt brings what is new in the conversation.",
            "- What you write in answer is posted to the conversation as your message when your "
            "prompt ends. When nothing needs saying, write nothing.",
            f'- Your tools are on the MCP server "{MCP_SERVER}": {_TOOLS}.',
            "- Your working directory belongs to this conversation and is kept between sessions.",
        ]
    parts = ["\n".join(how)]
    if prompt.instructions.strip():
        parts.append(f"Your instructions:\n{prompt.instructions.strip()}")
    if prompt.recent:
        parts.append(_lines("The conversation so far:", prompt.recent))
    if prompt.subscribed:
        followed = "\n".join(f"- {_task_line(task)}" for task in prompt.subscribed)
        parts.append(f"Tasks this conversation follows:\n{followed}")
    return parts


def _waiting(pending: int) -> str:
    if pending == 1:
        return "1 message waits for your answer."
    if pending:
        return f"{pending} messages wait for your answer."
    return "Nobody waits for an answer: write something only if the people should hear it."


def _lines(title: str, events: Sequence[PromptEvent]) -> str:
    return "\n".join([title, *(event_line(e, dated=True) for e in events)])


def _task_line(task: Mapping[str, Any]) -> str:
    assignee = task.get("assignee")
    assigned = f", assigned to {assignee}" if assignee else ""
    return f"{task.get('title')} [{task.get('status')}{assigned}] (task {task.get('id')})"


def _the_task(task: Mapping[str, Any]) -> str:
    body = task.get("body")
    return f"The task: {_task_line(task)}" + (f"\n{body}" if body else "")


def _digest(tasks: Sequence[Mapping[str, Any]], title: str) -> str:
    lines = [title]
    for task in tasks:
        lines.append(f"- {_task_line(task)}")
        for event in task.get("events", ()):
            changes = event.get("changes") or {}
            changed = ", ".join(_change(name, value) for name, value in changes.items())
            detail = "; ".join(piece for piece in (changed, event.get("text")) if piece)
            line = f"  #{event.get('seq')} {event.get('kind')} by {event.get('by')}"
            lines.append(f"{line}: {detail}" if detail else line)
    return "\n".join(lines)


def _change(name: str, value: Any) -> str:
    if isinstance(value, Mapping) and set(value) == {"from", "to"}:
        return f"{name}: {value['from']} -> {value['to']}"
    return f"{name}: {value}"
