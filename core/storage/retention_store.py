"""Retention: what people said, and what the gateway kept about it, removed once its time has
passed (`core.model.retention`).

`Expire` removes up to `limit` records of one kind of one role (or of the conversations no role
is in) older than their retention by the batch's clock, in one write batch: a bounded batch, so
that no expiry holds the writer long — `SqlRetention.expire` repeats it until nothing older is
left.

- **messages**: the `message` and `retraction` events of the conversations the role is in (or
  of those with no role, `role=None`), said before the cut. The events are deleted: every other
  event stays where it was, with its `seq` and `position` (a thread's next `seq` comes from the
  thread's row, the next position from the counter: nothing is renumbered or reused). Oldest
  first, by position, so each batch reads the start of the event stream's primary key.
- **memory**: the role's memory entries stored before the cut, with their redactions.
- **transcripts**: the records of the role's runs' turns that finished before the cut.
- **deliveries**: the role's records of Slack messages (`slack_messages`: which post is which
  event) made before the cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import and_, delete, exists, select
from sqlalchemy.sql.elements import ColumnElement

from core.model.retention import Kept
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.writer import Writer

CHUNK = 2_000
"""Records removed per write batch."""

_ROLE = "role:"
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Expire(NoRuns):
    """Remove up to `limit` records of `kept` of `role` (None: of the conversations no role is
    in; messages only) made more than `age` before the batch's time; how many went."""

    kept: Kept
    role: str | None
    age: timedelta
    limit: int = CHUNK
    thread_ids: Sequence[ThreadId] = ()
    """None locked: what expires is no longer any command's to read."""

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], int]:
        cut = batch.now - self.age // _MICROSECOND
        removed = _EXPIRE[self.kept](self, batch, cut)
        return lambda: removed


def _messages(expire: Expire, batch: Batch, cut: int) -> int:
    events, members = schema.events, schema.thread_participants
    in_it: ColumnElement[bool]
    if expire.role is not None:
        in_it = exists().where(
            members.c.thread_id == events.c.thread_id,
            members.c.address == _ROLE + expire.role,
        )
    else:
        in_it = ~exists().where(
            members.c.thread_id == events.c.thread_id, members.c.address.startswith(_ROLE)
        )
    chosen = (
        select(events.c.position)
        .where(events.c.kind.in_(("message", "retraction")), events.c.at < cut, in_it)
        .order_by(events.c.position)
        .limit(expire.limit)
    )
    doomed = events.c.position.in_(chosen.scalar_subquery())
    return batch.connection.execute(delete(events).where(doomed)).rowcount


def _memory(expire: Expire, batch: Batch, cut: int) -> int:
    entries, redactions = schema.memory_entries, schema.memory_redactions
    ids = [
        row[0]
        for row in batch.connection.execute(
            select(entries.c.id)
            .where(entries.c.role == expire.role, entries.c.at < cut)
            .limit(expire.limit)
        )
    ]
    if not ids:
        return 0
    batch.connection.execute(delete(redactions).where(redactions.c.entry_id.in_(ids)))
    return batch.connection.execute(delete(entries).where(entries.c.id.in_(ids))).rowcount


def _transcripts(expire: Expire, batch: Batch, cut: int) -> int:
    turns, runs = schema.turns, schema.runs
    of_role: ColumnElement[bool] = exists().where(
        runs.c.id == turns.c.run_id, runs.c.role == expire.role
    )
    chosen = select(turns.c.id).where(turns.c.finished_at < cut, of_role).limit(expire.limit)
    doomed = turns.c.id.in_(chosen.scalar_subquery())
    return batch.connection.execute(delete(turns).where(doomed)).rowcount


def _deliveries(expire: Expire, batch: Batch, cut: int) -> int:
    posts = schema.slack_messages
    older = and_(posts.c.role == expire.role, posts.c.created_at < cut)
    chosen = select(posts.c.channel_id, posts.c.ts).where(older).limit(expire.limit)
    found = list(batch.connection.execute(chosen))
    removed = 0
    for channel_id, ts in found:
        removed += batch.connection.execute(
            delete(posts).where(
                posts.c.role == expire.role, posts.c.channel_id == channel_id, posts.c.ts == ts
            )
        ).rowcount
    return removed


_EXPIRE: dict[Kept, Callable[[Expire, Batch, int], int]] = {
    Kept.MESSAGES: _messages,
    Kept.MEMORY: _memory,
    Kept.TRANSCRIPTS: _transcripts,
    Kept.DELIVERIES: _deliveries,
}


class SqlRetention:
    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    async def expire(
        self, kept: Kept, role: str | None, age: timedelta, *, limit: int = CHUNK
    ) -> int:
        """Remove every record of `kept` of `role` (None: messages of conversations no role is
        in) made more than `age` ago, `limit` a write batch; how many went."""
        if role is None and kept is not Kept.MESSAGES:
            raise ValueError("only messages belong to no role")
        removed = 0
        while True:
            went = await self._writer.run(Expire(kept, role, age, limit))
            removed += went
            if went < limit:
                return removed
