"""Memory entries as older versions stored them, written straight into a real database.

Before `core.model.memory.check_payload` ran `core.model.values`, a payload went to storage as
`json.dumps`
gave it: `Infinity`/`NaN` and integers past 64 bits, NULs and lone surrogates included. SQLite
kept any such text; PostgreSQL's `json` column (before migration 0016) refused NaN and infinities
but kept NUL and lone surrogates. These helpers write such rows the way the old `StoreMemory` did
(the entry, and on SQLite its FTS row), for tests of what reading them does now.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from core.model.memory import text_of
from core.storage.ids import new_id


def old_payloads(dialect: str) -> dict[str, dict[str, object]]:
    """Payloads older versions stored on `dialect` ("sqlite" or "postgresql"), by their
    `text`; one ("good") is fine and must read back as it was."""
    payloads: dict[str, dict[str, object]] = {
        "huge": {"kind": "note", "text": "huge", "x": 10**30},
        "surrogate": {"kind": "note", "text": "surrogate", "x": "a\ud800b"},
        "nul": {"kind": "note", "text": "nul", "x": "a\x00b"},
        "good": {"kind": "note", "text": "good", "x": "tea 😀"},
    }
    if dialect == "sqlite":
        payloads["infinite"] = {"kind": "note", "text": "infinite", "x": float("inf")}
        payloads["nan"] = {"kind": "note", "text": "nan", "x": float("nan"), "y": float("-inf")}
    return payloads


async def insert_raw(
    url: str,
    payloads: Mapping[str, Mapping[str, object]],
    *,
    role: str,
    column: str = "jsonb",
    thread_id: str | None = None,
) -> list[str]:
    """Write one entry per payload (shared: `thread_only` false), cast on PostgreSQL to the
    column's type (`json` before 0016, `jsonb` after); their ids."""
    engine = create_async_engine(url)
    ids: list[str] = []
    try:
        async with engine.begin() as conn:
            sqlite = conn.dialect.name == "sqlite"
            value = ":payload" if sqlite else f"CAST(:payload AS {column})"
            for at, payload in enumerate(payloads.values(), start=1):
                entry_id, words = new_id(), text_of(payload)
                await conn.execute(
                    text(
                        "INSERT INTO memory_entries (id, role, at, payload, text, thread_id, "
                        f"thread_only) VALUES (:id, :role, :at, {value}, :text, :thread, false)"
                    ),
                    {
                        "id": entry_id,
                        "role": role,
                        "at": at,
                        "payload": json.dumps(payload),
                        "text": words,
                        "thread": thread_id,
                    },
                )
                if sqlite:
                    await conn.execute(
                        text("INSERT INTO memory_search (text, entry_id) VALUES (:t, :id)"),
                        {"t": words, "id": entry_id},
                    )
                ids.append(entry_id)
    finally:
        await engine.dispose()
    return ids
