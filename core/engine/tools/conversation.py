"""The conversation tools: read what is pending, say something, retract what the role said.
Each acts in the run's own conversation (`not_a_conversation` for a task run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from core.engine.runtimes.base import PromptEvent
from core.engine.tools.base import READS, Arg, Effects, tool
from core.engine.tools.context import ToolContext
from core.engine.tools.results import EVENT, MESSAGE_REF, listing
from core.model.errors import InvalidInput
from core.model.runs.conversation import pending_for
from core.model.timeline import (
    MAX_REASON_LENGTH,
    MAX_TEXT_LENGTH,
    EventId,
    check_reason,
    check_text,
    parse_context,
)


def _hint(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": 200, "description": description}


def _pending(events: Sequence[PromptEvent]) -> dict[str, Any]:
    return {"pending": [event.to_json() for event in events]}


class ConversationTools(ToolContext):
    @tool(
        description="Messages that arrived in this conversation since you last read, "
        "without consuming them: they still come with your next turn.",
        result='`{"pending": [event, …]}`: what arrived since the run last read, not consumed',
        answer=_pending,
        output=listing("pending", EVENT, "in the order they arrived"),
        effects=READS,
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
        output=MESSAGE_REF,
        effects=Effects(),
    )
    async def send_message(
        self,
        text: Annotated[str, Arg(doc=f"what to say, up to {MAX_TEXT_LENGTH:,} characters")],
        *,
        context: Annotated[
            Mapping[str, Any] | None,
            Arg(
                doc="`{kind, task?, originating_message?}`: why you say it, a hint stored with "
                "the message that nothing acts on",
                schema={
                    "properties": {
                        "kind": _hint(
                            "what kind of message, in your words: reminder, follow_up, …"
                        ),
                        "task": _hint("the id of the task it is about"),
                        "originating_message": _hint("the id of the message it follows up"),
                    },
                    "required": ["kind"],
                    "additionalProperties": False,
                },
            ),
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
        output=MESSAGE_REF,
        effects=Effects(destructive=True, idempotent=True),
    )
    async def retract(
        self,
        message_id: Annotated[str, Arg(doc="the id of your message to retract")],
        *,
        reason: Annotated[
            str | None,
            Arg(doc=f"why, shown with the retraction; up to {MAX_REASON_LENGTH:,} characters"),
        ] = None,
    ) -> dict[str, Any]:
        if not isinstance(message_id, str) or not message_id:
            raise InvalidInput("message_id must be a message's id", code="invalid_argument")
        retraction = await self._db.threads.retract(
            self._conversation(), EventId(message_id), self._run.role_address, check_reason(reason)
        )
        return {"id": retraction.id, "seq": retraction.seq}
