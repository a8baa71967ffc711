"""Handing out positions, and reading only what no open batch can still go below.

Three streams are numbered by positions: the timeline's events, the task events and the audit
records. The rule readers rely on: **once a reader has read up to a position, nothing at or below
it will be committed later** — so a reader that resumes after a position misses nothing.

**SQLite** (one process, one writer): a counter row per stream (`stream_positions`), moved by
the writer inside its transaction. SQLite's writer lock serialises transactions, so positions
become visible in commit order and the counter itself is the head readers may read to.

**PostgreSQL** (many replicas, a writer each), in the way of Synapse's multi-writer stream ids:

- Each stream's positions come from a sequence (`schema.POSITION_SEQUENCES`): no row is updated
  by every committer, so the writers of several replicas commit side by side. A batch's
  positions increase, and are consecutive unless another writer took some in between; a batch
  rolled back leaves a gap, which readers pass over.
- Every writer has a row in `stream_writers` (registered, and committed, before its first
  batch) with a lock key. Each of its batches takes the transaction-scoped advisory lock
  (`WRITER_LOCKS`, lock key) before it takes any position — in the statement that takes them,
  which also records in its row the highest it took. The lock goes with the commit or rollback,
  so it is held exactly while the batch may still commit positions; a dead replica's is released
  by the server with its connection.
- The **committed head** of a stream, what a reader may read to (`committed_heads`): first the
  sequence's last value L (every position handed out so far is ≤ L), then, for each writer, a
  try for its lock in shared mode (taken and given back in the same short transaction). A
  writer whose lock is free has no batch open: whatever it took at or below L is committed, or
  rolled back for good. A writer whose lock is held may commit any position above the highest
  its committed batches took (its row, as committed): that is its bound. The head is the least
  of L and those bounds. A writer whose batch began after the read of L takes positions above L.
- The head must be read on its own, *before* the snapshot the reader reads in
  (`read_committed`): a batch that commits between the two is then in the reader's snapshot.
  Readers take their snapshots at their first statement (REPEATABLE READ), so a head read inside
  the same snapshot could count a batch as committed that the snapshot does not show. Its two
  statements run in autocommit (`Transactor.transact_single`), each a transaction of its own:
  the tries for the locks see every writer row as committed when they run, after L was read,
  which bounds each open batch as above.

`stream_writers` rows of processes gone for a day (their lock free) are deleted when a writer
registers; a batch whose writer row is missing fails (`WriterGone`) and commits nothing, so a
row deleted under a stalled writer cannot let its positions be passed over.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Integer,
    bindparam,
    func,
    literal_column,
    select,
    text,
    update,
)

from core.storage import schema
from core.storage.errors import StorageUnavailable
from core.storage.statements import DriverStatement
from core.storage.transact import Transactor

R = TypeVar("R")

WRITER_LOCKS = 0x526F7073
"""The first key of every writer's advisory lock (the bytes of "Rops"): a two-integer key, like
the migration's and the cluster facts' (`core.storage.migrate`), apart from the one-bigint keys
that names are hashed into."""
FORGOTTEN_AFTER_US = 24 * 3600 * 1_000_000
"""A writer row unused this long, its lock free, is deleted when another writer registers."""

_c, _w = schema.stream_positions, schema.stream_writers
_COLUMNS = {
    schema.EVENTS_STREAM: _w.c.events,
    schema.TASK_EVENTS_STREAM: _w.c.task_events,
    schema.AUDIT_STREAM: _w.c.audit,
}


_ADVANCE = DriverStatement(
    update(_c)
    .where(_c.c.stream == bindparam("stream"))
    .values(value=_c.c.value + bindparam("n", type_=_c.c.value.type))
    .returning(_c.c.value),
    ["stream", "n"],
)


def _take(stream: str) -> DriverStatement:
    """The writer's lock, then `n` positions from the sequence, recorded in the writer's row:
    one statement. Each position is computed only from a row of the lock's (a CASE on it), so
    no `nextval` runs before the lock is held."""
    column, sequence = _COLUMNS[stream].name, schema.POSITION_SEQUENCES[stream]
    return DriverStatement(
        text(
            "WITH held AS MATERIALIZED (SELECT pg_advisory_xact_lock(:a, :b)::text AS locked), "
            f"taken AS (SELECT CASE WHEN locked IS NOT NULL THEN nextval('{sequence}') END AS p "
            "FROM held, generate_series(1, :n)) "
            f"UPDATE stream_writers SET {column} = GREATEST({column}, "
            "(SELECT max(p) FROM taken)), used_at = :now WHERE writer = :w "
            "RETURNING (SELECT array_agg(p ORDER BY p) FROM taken)"
        ).bindparams(
            bindparam("a", type_=Integer),
            bindparam("b", type_=Integer),
            bindparam("n", type_=Integer),
            bindparam("now", type_=BigInteger),
            bindparam("w"),
        ),
        ["a", "b", "n", "now", "w"],
    )


_TAKE = {stream: _take(stream) for stream in schema.STREAMS}


class WriterGone(StorageUnavailable):
    """This writer's row is gone (deleted as a writer unused for a day): the batch commits
    nothing; the writer registers again."""


@dataclass(frozen=True, slots=True)
class Heads:
    """The committed head of each stream: every position at or below it that will ever be
    committed is committed."""

    events: int
    tasks: int
    audit: int


@dataclass(frozen=True, slots=True)
class PgWriter:
    """A PostgreSQL writer's identity: its row and its lock's second key."""

    writer: str
    lock_key: int


def is_postgresql(connection: Connection) -> bool:
    return connection.dialect.name == "postgresql"


# --- writing -------------------------------------------------------------------------------------


def register_writer(connection: Connection, now: int, writer: str | None = None) -> PgWriter:
    """Record a new writer (commit before its first batch); forget writers long unused. Writers
    registering at once do so one after another (the lock `(WRITER_LOCKS, 0)`: lock keys start
    at 1), so each gets a key of its own."""
    connection.execute(text("SELECT pg_advisory_xact_lock(:a, 0)"), {"a": WRITER_LOCKS})
    _forget_unused(connection, now)
    name = writer or secrets.token_hex(16)
    # Its batches take positions above those handed out now: its bound while one is open.
    heads = handed_out(connection)
    lock_key = connection.execute(
        text(
            "INSERT INTO stream_writers (writer, lock_key, events, task_events, audit, "
            "registered_at, used_at) SELECT :w, COALESCE(MAX(lock_key), 0) + 1, :e, :t, :a, "
            ":now, :now FROM stream_writers RETURNING lock_key"
        ),
        {"w": name, "now": now, "e": heads.events, "t": heads.tasks, "a": heads.audit},
    ).scalar_one()
    return PgWriter(name, int(lock_key))


def _forget_unused(connection: Connection, now: int) -> None:
    old = connection.execute(
        select(_w.c.lock_key).where(_w.c.used_at < now - FORGOTTEN_AFTER_US)
    ).scalars()
    for key in old:
        free = connection.execute(
            text("SELECT pg_try_advisory_xact_lock(:a, :b)"), {"a": WRITER_LOCKS, "b": key}
        ).scalar_one()
        if free:  # held now by this transaction: its writer cannot begin a batch meanwhile
            connection.execute(_w.delete().where(_w.c.lock_key == key))


def open_batch(connection: Connection, writer: PgWriter) -> None:
    """Hold the writer's lock until the batch ends, from now (each `take` holds it from its
    positions on anyway: a batch that savepoints must take it before its first savepoint, which
    would give back a lock taken inside it)."""
    connection.execute(
        text("SELECT pg_advisory_xact_lock(:a, :b)"), {"a": WRITER_LOCKS, "b": writer.lock_key}
    )


def take(
    connection: Connection, stream: str, count: int, writer: PgWriter | None, now: int
) -> list[int]:
    """`count` new positions of `stream`, increasing: from its sequence and recorded in the
    writer's row, with when, the writer's lock held from before them to the batch's end
    (PostgreSQL, `writer` given), or from its counter row (SQLite)."""
    if writer is None:
        end = int(_ADVANCE.scalar(connection, (stream, count)))
        return list(range(end - count + 1, end + 1))
    try:
        taken = _TAKE[stream].scalar(
            connection, (WRITER_LOCKS, writer.lock_key, count, now, writer.writer)
        )
    except LookupError:  # no row updated: the writer's row is gone
        raise WriterGone(f"the writer {writer.writer} is no longer registered") from None
    return [int(p) for p in taken]


# --- reading -------------------------------------------------------------------------------------


def handed_out_expression(dialect: str, stream: str) -> ColumnElement[int]:
    """The highest position of `stream` handed out so far, as a scalar SQL expression: the
    counter (SQLite) or the sequence's last value (PostgreSQL). On PostgreSQL a position at or
    below it may still be uncommitted: it is where something starting now begins (a DM bound,
    a subscription, an endpoint registered), not how far a reader may read."""
    if dialect != "postgresql":
        return select(_c.c.value).where(_c.c.stream == stream).scalar_subquery()
    sequence = schema.POSITION_SEQUENCES[stream]
    return literal_column(
        f"(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM {sequence})",
        BigInteger,
    )


def handed_out(connection: Connection) -> Heads:
    """Each stream's `handed_out_expression` (0 before the first position)."""
    name = connection.dialect.name
    row = connection.execute(
        select(*(func.coalesce(handed_out_expression(name, s), 0) for s in schema.STREAMS))
    ).one()
    return Heads(*(int(value) for value in row))


def committed_heads(connection: Connection) -> Heads:
    """Each stream's committed head. On PostgreSQL, on its own, before the snapshot it is read
    in (`read_committed`)."""
    if not is_postgresql(connection):
        values = {
            row.stream: row.value for row in connection.execute(select(_c.c.stream, _c.c.value))
        }
        return Heads(*(int(values.get(stream, 0)) for stream in schema.STREAMS))
    handed_out = connection.execute(
        text(
            " UNION ALL ".join(
                f"SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM {seq}"
                for seq in (schema.POSITION_SEQUENCES[s] for s in schema.STREAMS)
            )
        )
    ).scalars()
    heads = [int(value) for value in handed_out]
    writers = connection.execute(
        select(
            _w.c.events,
            _w.c.task_events,
            _w.c.audit,
            func.pg_try_advisory_xact_lock_shared(WRITER_LOCKS, _w.c.lock_key).label("idle"),
        )
    ).all()
    for row in writers:
        if not row.idle:
            heads = [min(head, int(bound)) for head, bound in zip(heads, row[:3], strict=True)]
    return Heads(*heads)


async def read_committed(
    reads: Transactor,
    work: Callable[[Connection, Heads], R],
    *,
    brief: bool = False,
    single: bool = False,
) -> R:
    """`work(connection, heads)`, reading no position beyond `heads`: on SQLite in one
    transaction; on PostgreSQL the heads first, on their own. `brief`: the work is a bounded
    read (`Transactor.transact_brief`); `single`: its statements need no snapshot in common
    (`transact_single`) — on PostgreSQL the heads and the work then share one connection,
    every statement a transaction of its own, the heads' before the work's."""
    run = reads.transact_single if single else reads.transact_brief if brief else reads.transact
    if not reads.autocommits:
        return await run(lambda connection: work(connection, committed_heads(connection)))
    if single:
        return await run(
            lambda connection: work(connection, _no_lower(reads, committed_heads(connection)))
        )
    heads = await committed(reads)
    return await run(lambda connection: work(connection, heads))


async def committed(reads: Transactor) -> Heads:
    """Each stream's committed head, on its own (on PostgreSQL each of its two statements in
    a transaction of its own: see the module), never lower than one this process read before
    through `reads`."""
    return _no_lower(reads, await reads.transact_single(committed_heads))


_KNOWN: weakref.WeakKeyDictionary[Transactor, Heads] = weakref.WeakKeyDictionary()
"""The highest committed heads read through each transactor."""


def _no_lower(reads: Transactor, heads: Heads) -> Heads:
    """`heads`, raised to those read before: a head once read stays true (every position at or
    below it was finished then, and later ones are handed out above it), but a later read can
    find a lower one — a writer that opens a batch bounds it by what that writer last
    committed, however long ago."""
    known = _KNOWN.get(reads)
    if known is not None:
        heads = Heads(
            max(heads.events, known.events),
            max(heads.tasks, known.tasks),
            max(heads.audit, known.audit),
        )
    _KNOWN[reads] = heads
    return heads


def known_final(reads: Transactor, events: int, tasks: int) -> None:
    """Say that every position up to `events` and `tasks` is final (committed, or never to be):
    reads through `reads` then go at least that far. The follower says so of what it handed to
    its listeners (`core.storage.follow`), so that a listener it nudged reads what it was told
    of even while another writer's open batch holds the committed head below it."""
    _no_lower(reads, Heads(events, tasks, 0))


def follows_on(positions: Sequence[int], after: int) -> bool:
    """Whether `positions` are exactly the ones right after `after`, one after another."""
    return all(position == after + i for i, position in enumerate(positions, start=1))
