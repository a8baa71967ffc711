"""Agent memory: one append-only store per role, and who may recall what.

    MemoryEntry {id, role, at, payload, thread_id?, thread_only}

`store(payload)` inside thread T stamps `thread_id = T` and `thread_only` from T's memory policy
at that moment (a later policy change affects only later entries). `recall` inside thread T sees
an entry iff

    entry.thread_id == T  or  entry.thread_id is None  or  not entry.thread_only

— never another thread's private entries. Membership plays no part: entries written before a
participant was removed stay recallable in that thread after the re-add. An agent's to-dos are
entries whose payload says so (e.g. `{"kind": "todo", …}`); there is no separate store.

An operator may redact an entry: a `Redaction` {entry_id, role, at, by, reason} is recorded
beside it (the entry itself is never changed or deleted; memory stays append-only), at most one
per entry, and from then on the entry is recalled nowhere — in no thread, by no query.

A recall query is free text, matched word by word (every word must occur) against the text of
the payload, plus optional equality filters on top-level payload fields (`where`). Nothing here
does I/O; storage implements the query with SQLite FTS5 or PostgreSQL full-text search.

Memory cannot be poisoned: a payload, a query and its filters must be acceptable values
(`core.model.values`) before they reach storage, so every entry stored can be indexed, filtered and
read back on both backends. Entries that older versions stored with values storage cannot read
(NaN, infinities, integers past 64 bits, NUL, lone surrogates) are read through
`payload_from_storage`, which never fails: what it cannot keep it mends (`clean_value`) and says
so (`MemoryEntry.cleaned`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NewType

from core.model.errors import InvalidInput, TooLarge
from core.model.memory_policy import MemoryPolicy
from core.model.timeline import ThreadId, check_reason
from core.model.values import MAX_INT, MIN_INT, check_text, check_value, clean_value

MemoryId = NewType("MemoryId", str)

MAX_PAYLOAD_BYTES = 16_384
MAX_QUERY_LENGTH = 500
MAX_RECALL = 100
DEFAULT_RECALL = 10
_WORD = re.compile(r"[^\W_]+")
_FIELD = re.compile(r"[A-Za-z0-9_-]{1,64}")

JsonScalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Redaction:
    """An operator's redaction of one entry: who (`by`), when, and why (`reason`, optional)."""

    entry_id: MemoryId
    role: str
    at: datetime
    by: str
    reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEntry:
    id: MemoryId
    role: str
    at: datetime
    payload: Mapping[str, Any]
    thread_id: ThreadId | None
    thread_only: bool
    redaction: Redaction | None = None
    """Set when an operator redacted the entry (only operator listings show such entries)."""
    cleaned: bool = False
    """The payload as stored held values storage cannot read, and was mended on reading."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Recall:
    """A validated recall: the words to match (none: any entry), field filters, how many."""

    words: tuple[str, ...] = ()
    where: Mapping[str, JsonScalar] | None = None
    limit: int = DEFAULT_RECALL


def stamp(thread_id: ThreadId | None, policy: MemoryPolicy | None) -> tuple[ThreadId | None, bool]:
    """What a new entry records of where it was stored: the thread, and its policy then."""
    if thread_id is None or policy is None:
        return None, False
    return thread_id, policy.thread_only


def recallable_in(entry: MemoryEntry, thread_id: ThreadId | None) -> bool:
    """The visibility rule. Outside any thread (None): entries of no thread, and shared ones.
    A redacted entry is recallable nowhere."""
    if entry.redaction is not None:
        return False
    return entry.thread_id is None or entry.thread_id == thread_id or not entry.thread_only


def text_of(payload: Mapping[str, Any]) -> str:
    """The words of a payload that full-text search indexes: every string and number in it,
    keys included, lower-cased."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                parts.append(str(key))
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)
        elif isinstance(value, str | int | float) and not isinstance(value, bool):
            parts.append(str(value))

    walk(payload)
    return " ".join(_WORD.findall(" ".join(parts).lower()))


def matches(entry: MemoryEntry, recall: Recall) -> bool:
    """The query as storage must implement it (used by tests as the reference)."""
    words = set(text_of(entry.payload).split())
    if any(word not in words for word in recall.words):
        return False
    return all(entry.payload.get(k) == v for k, v in (recall.where or {}).items())


def check_payload(raw: object) -> dict[str, Any]:
    """A payload to store: a JSON object of acceptable values (`core.model.values`, field
    `payload`), at most `MAX_PAYLOAD_BYTES` as JSON."""
    if not isinstance(raw, dict):
        raise InvalidInput("payload must be a JSON object", code="invalid_payload")
    check_value(raw, "payload")
    size = len(json.dumps(raw, ensure_ascii=False).encode())
    if size > MAX_PAYLOAD_BYTES:
        raise TooLarge(
            f"payload is {size} bytes as JSON; the limit is {MAX_PAYLOAD_BYTES}",
            code="payload_too_large",
        )
    return raw


def parse_recall(query: object = None, *, where: object = None, limit: object = None) -> Recall:
    if query is None:
        query = ""
    if not isinstance(query, str):
        raise InvalidInput("query must be a string", code="invalid_query")
    check_text(query, "query")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidInput(
            f"query is {len(query)} characters; the limit is {MAX_QUERY_LENGTH}",
            code="invalid_query",
        )
    filters: dict[str, JsonScalar] | None = None
    if where is not None:
        if not isinstance(where, dict) or not all(
            (isinstance(v, str | int | float | bool) or v is None)
            and isinstance(k, str)
            and _FIELD.fullmatch(k)
            for k, v in where.items()
        ):
            raise InvalidInput(
                "where must be an object of top-level payload fields (letters, digits, '_' or "
                "'-') and plain values (string, number, true/false or null)",
                code="invalid_where",
            )
        check_value(where, "where")
        filters = dict(where)
    if limit is None:
        count = DEFAULT_RECALL
    elif isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit <= MAX_RECALL:
        count = limit
    else:
        raise InvalidInput(
            f"limit must be a whole number from 1 to {MAX_RECALL}", code="invalid_limit"
        )
    words = tuple(dict.fromkeys(_WORD.findall(query.lower())))
    return Recall(words=words, where=filters, limit=count)


def check_redaction_reason(raw: object) -> str | None:
    """The optional reason an operator gives for a redaction (as a retraction's reason)."""
    reason = check_reason(raw)
    return check_text(reason, "reason") if reason is not None else None


def _int_or_overflow(digits: str) -> int | float:
    # An integer past 64 bits becomes infinity, which `clean_value` turns into null; so does one
    # of more digits than `int()` will parse, which would otherwise fail the whole payload.
    if len(digits) > 20:
        return math.inf
    number = int(digits)
    return number if MIN_INT <= number <= MAX_INT else math.inf


_tolerant = json.JSONDecoder(parse_int=_int_or_overflow)
"""Python's decoder already reads `NaN` and `Infinity` (as older versions of SQLite rows hold)."""


def payload_from_storage(stored: str) -> tuple[dict[str, Any], bool]:
    """A stored payload's JSON text as a payload of acceptable values, and whether it had to be
    mended. Never raises: text that is not a JSON object at all (no version of Rolecall wrote
    such) reads as `{}`, mended."""
    try:
        decoded = _tolerant.decode(stored)
    except (ValueError, RecursionError):
        return {}, True
    if not isinstance(decoded, dict):
        return {}, True
    mended, changed = clean_value(decoded)
    return mended, changed
