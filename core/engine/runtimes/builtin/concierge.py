"""`concierge`: the demo role's agent. It greets, remembers what it is told to remember, and says
what it remembers.

    remember <something>     → stores it in the role's memory (`store`)
    what do you remember?    → recalls what this conversation may see (`recall`)
    create a task: <title>   → creates the task and watches it (`task_create`, `subscribe`)
    anything else            → says it heard you, and how to use it

On news of a task it watches, it tells the person when the task's status changed, and says
nothing otherwise (a task's creation, a comment, another field changed).

On a task assigned to it (its run on the task: it cannot send messages there, and what it
answers is recorded on the task as its comment) it answers once, when the task becomes its
own — created with it as the assignee, or assigned to it later — that it cannot do the work
and the task needs another assignee; on the task's other news it says nothing.

Task news comes as one digest (`core.model.runs.conversation.task_digest`): per task, events
`{seq, kind, by, changes, text}`, whose `changes` are the task's fields for `created` and
`{field: {"from", "to"}}` for `updated` (`core.model.tasks.TaskEvent`).

What it remembers is agent memory, so it lasts across sessions ("start fresh" keeps it) and, like
all memory, stays in this conversation unless the conversation's memory policy shares it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from core.engine.runtimes.base import Prompt, PromptEvent, Reply, Step, ToolCall, TurnTools, Update
from core.engine.runtimes.builtin.agent import BuiltinAgent

_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?remember(?:\s+that)?[\s:,]+(?P<what>.+?)\s*$", re.I | re.S
)
_RECALL = re.compile(r"what\s+do\s+you\s+(?:remember|know)", re.I)
_TASK = re.compile(r"^\s*(?:please\s+)?create\s+a\s+task[\s:,]+(?P<title>.+?)\s*$", re.I | re.S)
RECALL_LIMIT = 20


class Concierge(BuiltinAgent):
    name = "concierge"

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        if prompt.task is not None:
            for update in self._on_its_task(prompt):
                yield update
            return
        greet = prompt.opening
        for event in prompt.news:
            if not _from_a_person(event):
                continue
            yield Step("thought", f"answering message {event.seq}")
            text = event.text or ""
            if match := _REMEMBER.match(text):
                what = match.group("what").rstrip(".")
                payload = {"kind": "note", "text": what}
                stored = await tools.store(payload)
                yield ToolCall("store", {"payload": payload}, result=stored)
                answer = f"I'll remember that: {what}."
            elif task := _TASK.match(text):
                title = task.group("title").rstrip(".")[:200]
                created = await tools.task_create(title)
                yield ToolCall("task_create", {"title": title}, result=created["id"])
                await tools.subscribe(created["id"])
                yield ToolCall("subscribe", {"task_id": created["id"]}, result=True)
                answer = f'I created the task "{title}" and will tell you when its status changes.'
            elif _RECALL.search(text):
                found = await tools.recall(where={"kind": "note"}, limit=RECALL_LIMIT)
                yield ToolCall("recall", {"where": {"kind": "note"}}, result=len(found))
                notes = [str(e["payload"].get("text")) for e in reversed(found)]
                answer = (
                    "You asked me to remember: " + "; ".join(notes) + "."
                    if notes
                    else 'Nothing yet. Tell me "remember …" and I will keep it.'
                )
            else:
                answer = (
                    f'You said: "{text.strip()}". Tell me "remember …" and I will keep it, '
                    'ask "what do you remember?", or say "create a task: …".'
                )
            if greet:
                answer = f"Hello, I'm {self.spec.display_name}. {answer}"
                greet = False
            yield Reply(answer)
        for news in prompt.tasks:
            moved = _status_moved_to(news["events"])
            if moved is not None:
                text = f'The task "{news["title"]}" is now {moved.replace("_", " ")}.'
                sent = await tools.send_message(text)
                yield ToolCall("send_message", {"text": text}, result=sent)

    def _on_its_task(self, prompt: Prompt) -> list[Update]:
        """A turn of its run on a task assigned to it: what it answers is the task's comment."""
        assert prompt.task is not None
        events = [event for news in prompt.tasks for event in news["events"]]
        if not any(_assigns(event, prompt.role) for event in events):
            return [Step("thought", "news of my task, none that asks anything of me")]
        title = prompt.task["title"]
        return [
            Step("thought", f"the task {prompt.task['id']} was assigned to me"),
            Reply(
                f'Hello, I\'m {self.spec.display_name}. I cannot work on "{title}" myself: I '
                "greet people, remember what they tell me and watch tasks for them in their "
                "conversations. Please assign this task to a role that can do it."
            ),
        ]


def _status_moved_to(events: list[Mapping[str, Any]]) -> str | None:
    """The status the task's latest status change among `events` moved it to (None: none
    did). Only an `updated` event changes a status; a `created` one states the first."""
    moved = None
    for event in events:
        change = event["changes"].get("status") if event["kind"] == "updated" else None
        if isinstance(change, Mapping) and isinstance(change.get("to"), str):
            moved = change["to"]
    return moved


def _assigns(event: Mapping[str, Any], role: str) -> bool:
    """The event makes `role` the task's assignee: its creation so, or a change to it."""
    changes = event["changes"]
    if event["kind"] == "created":
        return bool(changes.get("assignee") == role)
    if event["kind"] == "updated":
        change = changes.get("assignee")
        return isinstance(change, Mapping) and change.get("to") == role
    return False


def _from_a_person(event: PromptEvent) -> bool:
    return (
        event.kind == "message"
        and not event.retracted
        and event.author is not None
        and event.author.startswith("person:")
    )
