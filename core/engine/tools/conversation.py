"""The conversation tools: read what is pending, say something, retract what the role said.
Each acts in the run's own conversation (`not_a_conversation` for a task run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from core.engine.runtimes.base import PromptEvent
from core.engine.tools.base import Arg, tool
from core.engine.tools.context import ToolContext
from core.model.errors import InvalidInput
from core.model.runs.conversation import pending_for
from core.model.timeline import EventId, check_reason, check_text, parse_context


def _pending(events: Sequence[PromptEvent]) -> dict[str, Any]:
    return {"pending": [event.to_json() for event in events]}


class ConversationTools(ToolContext):
    @tool(
        description="Messages that arrived in this conversation since you last read, "
        "without consuming them: they still come with your next turn.",
        result='`{"pending": [event, …]}`: what arrived since the run last read, not consumed',
        answer=_pending,
    )
    async def peek_pending(self) -> Sequence[PromptEvent]:
        role = self._run.role_address
        thread_id = self._conversation()
        page = await self._db.runs.pending(thread_id, role, after=self._read_to, limit=200)
        return pending_for(page.events, role=role)

    @tool(
        description="Say something in this conversation now. `context` is an optional hint "
        "{kind, task?, originating_message?} stored with the message.",
        result='`{"id", "seq"}` of the role\'s new message',
    )
    async def send_message(
        self,
        text: str,
        *,
        context: Annotated[
            Mapping[str, Any] | None, Arg(doc="`{kind, task?, originating_message?}`")
        ] = None,
    ) -> dict[str, Any]:
        message = await self._db.threads.post_message(
            self._conversation(),
            self._run.role_address,
            check_text(text),
            parse_context(context),
            in_reply_to=await self._in_reply_to(),
        )
        self.sent += 1
        return {"id": message.id, "seq": message.seq}

    @tool(
        description="Retract one of your own earlier messages in this conversation.",
        result='`{"id", "seq"}` of the retraction; only the role\'s own messages (403 '
        "`not_the_author`)",
    )
    async def retract(self, message_id: str, *, reason: str | None = None) -> dict[str, Any]:
        if not isinstance(message_id, str) or not message_id:
            raise InvalidInput("message_id must be a message's id", code="invalid_argument")
        retraction = await self._db.threads.retract(
            self._conversation(), EventId(message_id), self._run.role_address, check_reason(reason)
        )
        return {"id": retraction.id, "seq": retraction.seq}
