"""Agent memory in SQL: storing through the writer, recalling with full-text search.

A stored entry takes its thread's lock (when it has a thread), so its `thread_only` is the
thread's memory policy at that moment, in order with policy changes. Recall is one statement:
the role's entries the thread may see (`core.memory.recallable_in`, written as SQL), matching
every word of the query — SQLite: the FTS5 table `memory_search`; PostgreSQL: the generated
`search` tsvector with its GIN index — and the field filters, newest first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
    and_,
    cast,
    column,
    func,
    insert,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.dialects.postgresql import JSONB

from core.memory import MemoryEntry, MemoryId, Recall, stamp, text_of
from core.memory_policy import MemoryPolicy
from core.storage import schema
from core.storage.ids import new_id
from core.storage.rows import from_micros
from core.storage.transact import Transactor
from core.storage.writer import Batch, Writer
from core.timeline import ThreadId

_m = schema.memory_entries
_search = table(schema.MEMORY_SEARCH, column("rowid"), column("text"), column("entry_id"))
_INSERT_ENTRY = insert(_m)
_INSERT_SEARCH = insert(_search)


@dataclass(frozen=True, slots=True)
class StoreMemory:
    role: str
    payload: Mapping[str, Any]
    thread_id: ThreadId | None

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,) if self.thread_id is not None else ()

    def apply(self, batch: Batch) -> Callable[[], MemoryEntry]:
        policy = None
        if self.thread_id is not None:
            policy = MemoryPolicy(thread_only=batch.thread(self.thread_id).thread_only)
        thread_id, thread_only = stamp(self.thread_id, policy)
        entry = MemoryEntry(
            id=MemoryId(new_id()),
            role=self.role,
            at=from_micros(batch.now),
            payload=dict(self.payload),
            thread_id=thread_id,
            thread_only=thread_only,
        )
        words = text_of(entry.payload)
        batch.connection.execute(
            _INSERT_ENTRY,
            {
                "id": entry.id,
                "role": entry.role,
                "at": batch.now,
                "payload": entry.payload,
                "text": words,
                "thread_id": thread_id,
                "thread_only": thread_only,
            },
        )
        if batch.connection.dialect.name == "sqlite":
            batch.connection.execute(_INSERT_SEARCH, {"text": words, "entry_id": entry.id})
        return lambda: entry


def _recallable(thread_id: ThreadId | None) -> ColumnElement[bool]:
    shared = or_(_m.c.thread_id.is_(None), _m.c.thread_only.is_(False))
    return or_(shared, _m.c.thread_id == thread_id) if thread_id is not None else shared


def _field_is(dialect: str, name: str, value: object) -> ColumnElement[bool]:
    if dialect != "sqlite":
        field = cast(_m.c.payload, JSONB)[name]
        if value is None:
            return func.jsonb_typeof(field) == "null"
        return field == cast(value, JSONB)  # JSON equality: 1 is not "1", nor true
    path = f'$."{name}"'
    kind = func.json_type(_m.c.payload, path)
    if value is None:
        return kind == "null"
    if isinstance(value, bool):
        return kind == ("true" if value else "false")
    if isinstance(value, str):
        return and_(kind == "text", func.json_extract(_m.c.payload, path) == value)
    return and_(kind.in_(["integer", "real"]), func.json_extract(_m.c.payload, path) == value)


def recall(
    conn: Connection, role: str, thread_id: ThreadId | None, query: Recall
) -> list[MemoryEntry]:
    dialect = conn.dialect.name
    statement = select(_m).where(_m.c.role == role, _recallable(thread_id))
    newest_first = [_m.c.at.desc(), _m.c.id.desc()]
    if query.words:
        if dialect == "sqlite":
            match = " ".join(f'"{word}"' for word in query.words)
            statement = statement.join(_search, _search.c.entry_id == _m.c.id).where(
                literal_column(schema.MEMORY_SEARCH).op("MATCH", return_type=Boolean)(match)
            )
            # Entries are appended, so the FTS rows' order is the entries' order: walking it
            # backwards lets SQLite stop after `limit` matches instead of sorting every match
            # of a common word.
            newest_first = [_search.c.rowid.desc()]
        else:
            tsquery = func.to_tsquery("simple", " & ".join(query.words))
            statement = statement.where(
                literal_column("search").op("@@", return_type=Boolean)(tsquery)
            )
    for name, value in (query.where or {}).items():
        statement = statement.where(_field_is(dialect, name, value))
    statement = statement.order_by(*newest_first).limit(query.limit)
    return [
        MemoryEntry(
            id=MemoryId(row.id),
            role=row.role,
            at=from_micros(row.at),
            payload=row.payload,
            thread_id=ThreadId(row.thread_id) if row.thread_id else None,
            thread_only=row.thread_only,
        )
        for row in conn.execute(statement)
    ]


class SqlMemoryRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def store(
        self, role: str, payload: Mapping[str, Any], *, thread_id: ThreadId | None
    ) -> MemoryEntry:
        """Append an entry to `role`'s memory, stamped with the thread and its policy now."""
        return await self._writer.run(StoreMemory(role, payload, thread_id))

    async def recall(
        self, role: str, query: Recall, *, thread_id: ThreadId | None
    ) -> list[MemoryEntry]:
        """`role`'s entries that `thread_id` may see and that match, newest first."""
        return await self._reads.transact(lambda c: recall(c, role, thread_id, query))
