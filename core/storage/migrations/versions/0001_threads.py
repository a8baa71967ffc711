"""Threads, participants, the timeline and the position counter.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("set_key", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("memory_thread_only", sa.Boolean, nullable=False, server_default=sa.text("true")),
        sa.Column("last_seq", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("last_at", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.PrimaryKeyConstraint("id", name="pk_threads"),
        sa.UniqueConstraint("set_key", name="uq_threads_set_key"),
    )
    op.create_table(
        "thread_participants",
        sa.Column("thread_id", sa.String(32), nullable=False),
        sa.Column("address", sa.String(80), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("thread_id", "address", name="pk_thread_participants"),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name="fk_thread_participants_thread_id_threads"
        ),
    )
    op.create_index(
        "ix_thread_participants_address_thread_id", "thread_participants", ["address", "thread_id"]
    )
    op.create_table(
        "events",
        sa.Column("position", Position, nullable=False, autoincrement=False),
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("thread_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("author", sa.String(80)),
        sa.Column("text", sa.Text),
        sa.Column("context", sa.JSON),
        sa.Column("participant", sa.String(80)),
        sa.Column("from_state", sa.String(16)),
        sa.Column("to_state", sa.String(16)),
        sa.Column("target", sa.String(32)),
        sa.Column("reason", sa.Text),
        sa.PrimaryKeyConstraint("position", name="pk_events"),
        sa.UniqueConstraint("id", name="uq_events_id"),
        sa.UniqueConstraint("thread_id", "seq", name="uq_events_thread_id_seq"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], name="fk_events_thread_id_threads"),
    )
    op.create_index(
        "ix_events_state_changes",
        "events",
        ["thread_id", "participant", "seq"],
        sqlite_where=sa.text("kind = 'participant_state_changed'"),
        postgresql_where=sa.text("kind = 'participant_state_changed'"),
    )
    op.create_index(
        "ux_events_retraction_target",
        "events",
        ["target"],
        unique=True,
        sqlite_where=sa.text("kind = 'retraction'"),
        postgresql_where=sa.text("kind = 'retraction'"),
    )
    op.create_table(
        "stream_positions",
        sa.Column("stream", sa.String(32), nullable=False),
        sa.Column("value", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("stream", name="pk_stream_positions"),
    )
    op.execute("INSERT INTO stream_positions (stream, value) VALUES ('events', 0)")


def downgrade() -> None:
    op.drop_table("stream_positions")
    op.drop_index("ux_events_retraction_target", table_name="events")
    op.drop_index("ix_events_state_changes", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_thread_participants_address_thread_id", table_name="thread_participants")
    op.drop_table("thread_participants")
    op.drop_table("threads")
