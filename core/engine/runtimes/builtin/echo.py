"""`echo`: answers each new person message with exactly its text, in order. With `stream: true`
in the manifest it writes each reply word by word first (for channels that show a reply as it
is written), then says it whole."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from core.engine.runtimes.base import Prompt, Reply, ReplyChunk, TurnTools, Update
from core.engine.runtimes.builtin.agent import BuiltinAgent


class Echo(BuiltinAgent):
    name = "echo"

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        for event in prompt.news:
            from_a_person = event.author is not None and event.author.startswith("person:")
            if event.kind == "message" and from_a_person and not event.retracted:
                text = event.text or ""
                if self.spec.options.get("stream"):
                    for word in re.findall(r"\S+\s*", text):
                        yield ReplyChunk(word)
                yield Reply(text)
