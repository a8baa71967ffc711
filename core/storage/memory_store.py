"""Agent memory in SQL: storing through the writer, recalling with full-text search.

A stored entry takes its thread's lock (when it has a thread), so its `thread_only` is the
thread's memory policy at that moment, in order with policy changes. Recall is one statement:
the role's entries the thread may see (`core.model.memory.recallable_in`, written as SQL: redacted
entries never), matching every word of the query — SQLite: the FTS5 table `memory_search`;
PostgreSQL: the generated `search` tsvector with its GIN index — and the field filters, newest
first.

No stored entry can make a recall fail. Payloads are read as JSON text and decoded by
`core.model.memory.payload_from_storage`, which mends what it cannot keep. The field filters never
trip over a payload: on PostgreSQL the column is `jsonb` (since migration 0016, which mended the
`json` rows that could not become `jsonb`), so every stored payload is one PostgreSQL can
compare; on SQLite, whose JSON functions refuse text that is not JSON (the `Infinity` and `NaN`
older versions wrote), a payload that is not valid JSON is simply not matched by any filter.

A redaction (`memory_redactions`, one per entry) is appended through the writer like any other
write; the entry itself is never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
    Row,
    Select,
    Text,
    and_,
    case,
    cast,
    column,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.dialects.postgresql import JSONB

from core.model.errors import Conflict, NotFound
from core.model.memory import (
    MemoryEntry,
    MemoryId,
    Recall,
    Redaction,
    check_payload,
    payload_from_storage,
    stamp,
    text_of,
)
from core.model.memory_policy import MemoryPolicy
from core.model.timeline import ThreadId, rfc3339
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.ids import new_id
from core.storage.rows import from_micros
from core.storage.transact import Transactor
from core.storage.writer import Writer

_m = schema.memory_entries
_r = schema.memory_redactions
_search = table(schema.MEMORY_SEARCH, column("rowid"), column("text"), column("entry_id"))
_INSERT_ENTRY = insert(_m)
_INSERT_SEARCH = insert(_search)
_INSERT_REDACTION = insert(_r)
_ENTRY_COLUMNS = (
    _m.c.id,
    _m.c.role,
    _m.c.at,
    cast(_m.c.payload, Text).label("payload_text"),  # decoded by us, never by the driver
    _m.c.thread_id,
    _m.c.thread_only,
)
_REDACTION_COLUMNS = (
    _r.c.entry_id.label("redacted_id"),
    _r.c.at.label("redacted_at"),
    _r.c.by.label("redacted_by"),
    _r.c.reason.label("redacted_reason"),
)


@dataclass(frozen=True, slots=True)
class StoreMemory(NoRuns):
    role: str
    payload: Mapping[str, Any]
    thread_id: ThreadId | None

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,) if self.thread_id is not None else ()

    def check(self, batch: BatchView) -> tuple[ThreadId | None, bool]:
        """The entry's stamp: its thread and `thread_only`, from the thread's policy now."""
        policy = None
        if self.thread_id is not None:
            policy = MemoryPolicy(thread_only=batch.thread(self.thread_id).thread_only)
        return stamp(self.thread_id, policy)

    def write(self, batch: Batch, plan: tuple[ThreadId | None, bool]) -> Callable[[], MemoryEntry]:
        thread_id, thread_only = plan
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
    visible = or_(shared, _m.c.thread_id == thread_id) if thread_id is not None else shared
    return and_(visible, ~exists().where(_r.c.entry_id == _m.c.id))


def _field_is(dialect: str, name: str, value: object) -> ColumnElement[bool]:
    if dialect != "sqlite":
        field = cast(_m.c.payload, JSONB)[name]  # the column is jsonb: no cast happens
        if value is None:
            return func.jsonb_typeof(field) == "null"
        return field == cast(value, JSONB)  # JSON equality: 1 is not "1", nor true
    # SQLite's JSON functions raise on text that is not JSON: such a payload is no document.
    document = case((func.json_valid(_m.c.payload) == 1, _m.c.payload))
    path = f'$."{name}"'
    kind = func.json_type(document, path)
    if value is None:
        return kind == "null"
    if isinstance(value, bool):
        return kind == ("true" if value else "false")
    if isinstance(value, str):
        return and_(kind == "text", func.json_extract(document, path) == value)
    return and_(kind.in_(["integer", "real"]), func.json_extract(document, path) == value)


def _entry(row: Row[Any], redacted: bool = False) -> MemoryEntry:
    payload, cleaned = payload_from_storage(row.payload_text)
    redaction = None
    if redacted and row.redacted_id is not None:
        redaction = Redaction(
            entry_id=MemoryId(row.id),
            role=row.role,
            at=from_micros(row.redacted_at),
            by=row.redacted_by,
            reason=row.redacted_reason,
        )
    return MemoryEntry(
        id=MemoryId(row.id),
        role=row.role,
        at=from_micros(row.at),
        payload=payload,
        thread_id=ThreadId(row.thread_id) if row.thread_id else None,
        thread_only=bool(row.thread_only),
        redaction=redaction,
        cleaned=cleaned,
    )


def recall(
    conn: Connection, role: str, thread_id: ThreadId | None, query: Recall
) -> list[MemoryEntry]:
    dialect = conn.dialect.name
    statement = select(*_ENTRY_COLUMNS).where(_m.c.role == role, _recallable(thread_id))
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
    return [_entry(row) for row in conn.execute(statement)]


def _with_redactions() -> Select[Any]:
    return select(*_ENTRY_COLUMNS, *_REDACTION_COLUMNS).outerjoin(_r, _r.c.entry_id == _m.c.id)


def listing(
    conn: Connection, role: str, *, thread_id: ThreadId | None, after: str | None, limit: int
) -> list[MemoryEntry]:
    """Every entry of `role` (of one thread, when given), redacted ones included and marked,
    oldest first by id (ids are time-ordered), after the id `after`."""
    statement = _with_redactions().where(_m.c.role == role)
    if thread_id is not None:
        statement = statement.where(_m.c.thread_id == thread_id)
    if after is not None:
        statement = statement.where(_m.c.id > after)
    statement = statement.order_by(_m.c.id).limit(limit)
    return [_entry(row, redacted=True) for row in conn.execute(statement)]


def has_entries(conn: Connection, role: str) -> bool:
    return conn.execute(select(exists().where(_m.c.role == role))).scalar() is True


@dataclass(frozen=True, slots=True)
class RedactMemory(NoRuns):
    """Record an operator's redaction of one of `role`'s entries: 404 for an entry that is not
    the role's, 409 for one redacted already (the first redaction stands, who, when and why)."""

    role: str
    entry_id: str
    by: str
    reason: str | None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> MemoryEntry:
        """The entry, not redacted yet."""
        found = batch.connection.execute(
            _with_redactions().where(_m.c.id == self.entry_id, _m.c.role == self.role)
        ).first()
        if found is None:
            raise NotFound(
                f"role {self.role!r} has no memory entry {self.entry_id!r}",
                code="memory_entry_not_found",
            )
        earlier = _entry(found, redacted=True).redaction
        if earlier is not None:
            raise Conflict(
                f"memory entry {self.entry_id!r} was redacted already, at "
                f"{rfc3339(earlier.at)} by {earlier.by}",
                code="already_redacted",
            )
        return _entry(found)

    def write(self, batch: Batch, plan: MemoryEntry) -> Callable[[], MemoryEntry]:
        batch.connection.execute(
            _INSERT_REDACTION,
            {
                "entry_id": self.entry_id,
                "role": self.role,
                "at": batch.now,
                "by": self.by,
                "reason": self.reason,
            },
        )
        redaction = Redaction(
            entry_id=MemoryId(self.entry_id),
            role=self.role,
            at=from_micros(batch.now),
            by=self.by,
            reason=self.reason,
        )
        entry = replace(plan, redaction=redaction)
        return lambda: entry


class SqlMemoryRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def store(
        self, role: str, payload: Mapping[str, Any], *, thread_id: ThreadId | None
    ) -> MemoryEntry:
        """Append an entry to `role`'s memory, stamped with the thread and its policy now.
        The payload is checked (`core.model.memory.check_payload`) whoever calls."""
        return await self._writer.run(StoreMemory(role, check_payload(payload), thread_id))

    async def recall(
        self, role: str, query: Recall, *, thread_id: ThreadId | None
    ) -> list[MemoryEntry]:
        """`role`'s entries that `thread_id` may see and that match, newest first; never a
        redacted one."""
        return await self._reads.transact(lambda c: recall(c, role, thread_id, query))

    async def list(
        self, role: str, *, thread_id: ThreadId | None = None, after: str | None, limit: int
    ) -> list[MemoryEntry]:
        """For operators: `role`'s entries, redacted ones marked, oldest first after `after`."""
        return await self._reads.transact(
            lambda c: listing(c, role, thread_id=thread_id, after=after, limit=limit)
        )

    async def has_entries(self, role: str) -> bool:
        """Whether `role` has any memory at all (a role no longer served may still have)."""
        return await self._reads.transact(lambda c: has_entries(c, role))

    async def redact(self, role: str, entry_id: str, *, by: str, reason: str | None) -> MemoryEntry:
        """Redact `role`'s entry `entry_id` (the entry, with its redaction)."""
        return await self._writer.run(RedactMemory(role, entry_id, by, reason))
