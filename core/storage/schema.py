"""The tables. Migrations in `core/storage/migrations/` create exactly this schema.

- `threads`: one row per participant set (`set_key` is unique: that is what makes resolution
  race-free), with the per-thread `last_seq`/`last_at` that appends advance under the row's lock.
- `thread_participants`: permanent membership and each participant's current state.
- `events`: the timelines of all threads. `position` is the global order, assigned from the
  `stream_positions` counter inside the committing transaction; `(thread_id, seq)` is unique.
  Times are integer microseconds since the Unix epoch, UTC, exact on every backend.
- `stream_positions`: one counter row per stream; updating it serialises committers, so positions
  become visible in order and a reader resuming from a position never misses one.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# INTEGER PRIMARY KEY on SQLite (the rowid itself), BIGINT elsewhere.
Position = BigInteger().with_variant(Integer(), "sqlite")

threads = Table(
    "threads",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("set_key", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("memory_thread_only", Boolean, nullable=False, server_default=text("true")),
    Column("last_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("last_at", BigInteger, nullable=False, server_default=text("0")),
)

thread_participants = Table(
    "thread_participants",
    metadata,
    Column("thread_id", String(32), ForeignKey("threads.id"), primary_key=True),
    Column("address", String(80), primary_key=True),
    Column("state", String(16), nullable=False),
    Index(None, "address", "thread_id"),
)

events = Table(
    "events",
    metadata,
    Column("position", Position, primary_key=True, autoincrement=False),
    Column("id", String(32), nullable=False, unique=True),
    Column("thread_id", String(32), ForeignKey("threads.id"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("author", String(80)),
    Column("text", Text),
    Column("context", JSON(none_as_null=True)),
    Column("participant", String(80)),
    Column("from_state", String(16)),
    Column("to_state", String(16)),
    Column("target", String(32)),
    Column("reason", Text),
    UniqueConstraint("thread_id", "seq"),
    # A participant's own state changes, read for every filtered timeline. Partial, so that
    # appending a message does not touch it.
    Index(
        "ix_events_state_changes",
        "thread_id",
        "participant",
        "seq",
        sqlite_where=text("kind = 'participant_state_changed'"),
        postgresql_where=text("kind = 'participant_state_changed'"),
    ),
    # A message is retracted at most once; also answers "is this message retracted?".
    Index(
        "ux_events_retraction_target",
        "target",
        unique=True,
        sqlite_where=text("kind = 'retraction'"),
        postgresql_where=text("kind = 'retraction'"),
    ),
)

stream_positions = Table(
    "stream_positions",
    metadata,
    Column("stream", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

EVENTS_STREAM = "events"
