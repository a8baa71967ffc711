"""`concierge`: the demo role's agent. It greets, remembers what it is told to remember, and says
what it remembers.

    remember <something>     → keeps it
    what do you remember?    → lists what it keeps
    anything else            → says it heard you, and how to use it

Until agent memory exists, what it remembers lives in its session's state: it survives idle sleep
and restarts, and a fresh session starts with nothing remembered.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from core.runtimes.base import Prompt, PromptEvent, Reply, Step, TurnTools, Update
from core.runtimes.builtin.agent import BuiltinAgent

_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?remember(?:\s+that)?[\s:,]+(?P<what>.+?)\s*$", re.I | re.S
)
_RECALL = re.compile(r"what\s+do\s+you\s+(?:remember|know)", re.I)


class Concierge(BuiltinAgent):
    name = "concierge"

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        greet = prompt.opening
        for event in prompt.news:
            if not _from_a_person(event):
                continue
            answer = self._answer(event.text or "")
            if greet:
                answer = f"Hello, I'm {self.spec.display_name}. {answer}"
                greet = False
            yield Step("thought", f"answering message {event.seq}")
            yield Reply(answer)

    def _answer(self, text: str) -> str:
        remembered: list[str] = self.state.setdefault("remembered", [])
        if match := _REMEMBER.match(text):
            what = match.group("what").rstrip(".")
            remembered.append(what)
            return f"I'll remember that: {what}."
        if _RECALL.search(text):
            if not remembered:
                return 'Nothing yet. Tell me "remember …" and I will keep it.'
            return "You asked me to remember: " + "; ".join(remembered) + "."
        return (
            f'You said: "{text.strip()}". Tell me "remember …" and I will keep it, '
            'or ask "what do you remember?".'
        )


def _from_a_person(event: PromptEvent) -> bool:
    return (
        event.kind == "message"
        and not event.retracted
        and event.author is not None
        and event.author.startswith("person:")
    )
