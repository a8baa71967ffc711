"""The memory tools: `store` and `recall` (`core.model.memory` says what a conversation may
see of what its role remembers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from core.engine.tools.base import READS, Arg, Effects, tool
from core.engine.tools.context import ToolContext
from core.engine.tools.results import MEMORY_ENTRY, STORED, listing
from core.model.memory import (
    DEFAULT_RECALL,
    MAX_PAYLOAD_BYTES,
    MAX_RECALL,
    check_payload,
    parse_recall,
)
from core.model.timeline import rfc3339


class MemoryTools(ToolContext):
    @tool(
        description="Remember something in this conversation: a JSON object. It stays in "
        "this conversation unless the conversation's memory policy shares it.",
        result='`{"id", "shared"}`: `shared` is false unless the conversation\'s memory policy '
        "shares it",
        output=STORED,
        effects=Effects(),
    )
    async def store(
        self,
        payload: Annotated[
            Mapping[str, Any],
            Arg(
                doc=f"what to remember: a JSON object, at most {MAX_PAYLOAD_BYTES // 1024} KiB as "
                "JSON; `recall` finds it by its words and its top-level fields"
            ),
        ],
    ) -> dict[str, Any]:
        entry = await self._db.memory.store(
            self._run.role, check_payload(payload), thread_id=self._thread_id
        )
        return {"id": entry.id, "shared": not entry.thread_only}

    @tool(
        description="What you remember that this conversation may see, newest first: "
        "entries matching every word of `query` and the `where` fields.",
        result='`{"entries": [{"id", "at", "payload", "here"}, …]}`, newest first, never a '
        "[redacted](#memory) entry; `here`: stored in this conversation",
        answer=lambda entries: {"entries": entries},
        output=listing("entries", MEMORY_ENTRY, "newest first"),
        effects=READS,
    )
    async def recall(
        self,
        query: Annotated[
            str | None,
            Arg(
                doc="words that must all occur in an entry's payload, among its strings, numbers "
                'and keys, in any case; left out or "": every entry'
            ),
        ] = "",
        *,
        limit: Annotated[
            int | None,
            Arg(
                doc=f"how many entries at most, default {DEFAULT_RECALL}",
                minimum=1,
                maximum=MAX_RECALL,
            ),
        ] = None,
        where: Annotated[
            Mapping[str, Any] | None,
            Arg(
                doc="`{field: value}`: only entries whose payload has each of these top-level "
                "fields with that value, each a string, number, true/false or null",
                schema={"additionalProperties": {"type": ["string", "number", "boolean", "null"]}},
            ),
        ] = None,
    ) -> list[dict[str, Any]]:
        # Whatever empty thing a caller sends for the query (null, "", 0) asks for everything.
        recall = parse_recall(query or "", where=where, limit=limit)
        entries = await self._db.memory.recall(self._run.role, recall, thread_id=self._thread_id)
        return [
            {
                "id": e.id,
                "at": rfc3339(e.at),
                "payload": dict(e.payload),
                "here": e.thread_id == self._thread_id,
            }
            for e in entries
        ]
