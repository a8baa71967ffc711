"""`echo`: answers each new person message with exactly its text, in order."""

from __future__ import annotations

from collections.abc import AsyncIterator

from core.runtimes.base import Prompt, Reply, TurnTools, Update
from core.runtimes.builtin.agent import BuiltinAgent


class Echo(BuiltinAgent):
    name = "echo"

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        for event in prompt.news:
            from_a_person = event.author is not None and event.author.startswith("person:")
            if event.kind == "message" and from_a_person and not event.retracted:
                yield Reply(event.text or "")
