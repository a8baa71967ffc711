"""`concierge`: the demo role's agent. It greets, remembers what it is told to remember, and says
what it remembers.

    remember <something>     → stores it in the role's memory (`store`)
    what do you remember?    → recalls what this conversation may see (`recall`)
    create a task: <title>   → creates the task and watches it (`task_create`, `subscribe`)
    anything else            → says it heard you, and how to use it

On news of a task it watches, it tells the person when the task's status changed, and says
nothing otherwise.

What it remembers is agent memory, so it lasts across sessions ("start fresh" keeps it) and, like
all memory, stays in this conversation unless the conversation's memory policy shares it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

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
            moves = [e["changes"]["status"] for e in news["events"] if "status" in e["changes"]]
            if moves:
                await tools.send_message(
                    f'The task "{news["title"]}" is now {moves[-1]["to"].replace("_", " ")}.'
                )


def _from_a_person(event: PromptEvent) -> bool:
    return (
        event.kind == "message"
        and not event.retracted
        and event.author is not None
        and event.author.startswith("person:")
    )
