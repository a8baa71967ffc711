"""The agent's tools, one implementation each, called with the calling run as context.

`ConversationTools` serves one turn of a conversation run: what it may do is worked out from that
run (its role, its thread, the cursor the turn read up to). Built-in agents call it in process;
the HTTP and MCP surfaces of the tools issue will call the same methods.

- `peek_pending()`: messages that arrived during the turn, without consuming them.
- `store(payload)`: append to the role's memory, stamped with this conversation and its memory
  policy now (`core.memory`).
- `recall(query, limit, where)`: the role's memory as this conversation may see it, newest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.memory import check_payload, parse_recall
from core.runs.conversation import pending_for
from core.runs.run import Run
from core.runtimes.base import PromptEvent
from core.storage.database import Database
from core.timeline import rfc3339


class ConversationTools:
    def __init__(self, database: Database, run: Run, *, read_to: int) -> None:
        assert run.thread_id is not None, "conversation tools serve conversation runs"
        self._db = database
        self._run = run
        self._thread_id = run.thread_id
        self._read_to = read_to

    async def peek_pending(self) -> Sequence[PromptEvent]:
        role = self._run.role_address
        page = await self._db.runs.pending(self._thread_id, role, after=self._read_to, limit=200)
        return pending_for(page.events, role=role)

    async def store(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        entry = await self._db.memory.store(
            self._run.role, check_payload(payload), thread_id=self._thread_id
        )
        return {"id": entry.id, "shared": not entry.thread_only}

    async def recall(
        self, query: str = "", *, limit: int | None = None, where: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        recall = parse_recall(query, where=where, limit=limit)
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
