"""Positions without a global lock (PostgreSQL): each stream's positions come from a sequence
(`events_positions`, `task_events_positions`, `audit_positions`), each starting after the
stream's counter in `stream_positions`, so that positions keep increasing across the upgrade;
and `stream_writers` records, per writer, the highest position of each stream its committed
batches took and the key of the advisory lock its open batch holds (`core.storage.positions`).
On SQLite the counters stay what hands positions out; the table is created there too, and
stays empty. Nothing that was there changes.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

SEQUENCES = {
    "events": "events_positions",
    "task_events": "task_events_positions",
    "audit": "audit_positions",
}


def upgrade() -> None:
    op.create_table(
        "stream_writers",
        sa.Column("writer", sa.String(64), nullable=False),
        sa.Column("lock_key", sa.Integer, nullable=False),
        sa.Column("events", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("task_events", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("audit", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("registered_at", sa.BigInteger, nullable=False),
        sa.Column("used_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("writer", name="pk_stream_writers"),
        sa.UniqueConstraint("lock_key", name="uq_stream_writers_lock_key"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    for stream, sequence in SEQUENCES.items():
        op.execute(f"CREATE SEQUENCE {sequence} AS bigint MINVALUE 1 CACHE 1")
        # The next position is the one after the counter's (whose row may not exist yet).
        op.execute(
            f"SELECT setval('{sequence}', COALESCE((SELECT value FROM stream_positions "
            f"WHERE stream = '{stream}'), 0) + 1, false)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for stream, sequence in SEQUENCES.items():
            # The counters take over from where the sequences got to.
            op.execute(
                f"UPDATE stream_positions SET value = GREATEST(value, (SELECT CASE WHEN "
                f"is_called THEN last_value ELSE last_value - 1 END FROM {sequence})) "
                f"WHERE stream = '{stream}'"
            )
            op.execute(f"DROP SEQUENCE {sequence}")
    op.drop_table("stream_writers")
