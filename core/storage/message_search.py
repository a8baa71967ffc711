"""Finding messages by their text, for operators (`GET /api/v1/search/messages`).

Newest first, by position: a `LIKE` over the `events` table's messages, walking the primary key
backwards and stopping at the page's end, so a common word is found at once and a rare one
costs a scan of what is older than the page before it (`before`); `scanned` bounds the rows
one request reads, and the answer says where the next request continues. Retracted messages and
erased people's tombstones are not found: their text is not for reading.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, exists, func, select

from core.storage import schema
from core.storage.batch import Reads

_e = schema.events
_r = schema.events.alias("retractions")

SCANNED = 200_000
"""Messages one request looks through at most."""


@dataclass(frozen=True, slots=True)
class FoundMessage:
    position: int
    id: str
    thread_id: str
    seq: int
    at: int
    author: str | None
    text: str


@dataclass(frozen=True, slots=True)
class FoundMessages:
    messages: list[FoundMessage]
    next: int | None
    """The `before` that continues the search; None when nothing older is left."""


def found_messages(
    connection: Reads, text: str, *, before: int | None, limit: int, scanned: int = SCANNED
) -> FoundMessages:
    newest = select(_e.c.position).where(_e.c.kind == "message")
    if before is not None:
        newest = newest.where(_e.c.position < before)
    window = newest.order_by(_e.c.position.desc()).limit(scanned).subquery()
    floor = connection.execute(select(func.min(window.c.position))).scalar()
    if floor is None:
        return FoundMessages([], None)
    retracted = exists().where(and_(_r.c.kind == "retraction", _r.c.target == _e.c.id))
    query = select(
        _e.c.position, _e.c.id, _e.c.thread_id, _e.c.seq, _e.c.at, _e.c.author, _e.c.text
    ).where(
        _e.c.kind == "message",
        _e.c.position >= floor,
        func.lower(_e.c.text).contains(text.lower(), autoescape=True),
        ~retracted,
    )
    if before is not None:
        query = query.where(_e.c.position < before)
    rows = connection.execute(query.order_by(_e.c.position.desc()).limit(limit + 1)).all()
    found = [FoundMessage(*row) for row in rows[:limit]]
    if len(rows) > limit:
        return FoundMessages(found, found[-1].position)
    older = connection.execute(
        select(_e.c.position).where(_e.c.kind == "message", _e.c.position < floor).limit(1)
    ).scalar()
    return FoundMessages(found, floor if older is not None else None)
