"""Agent memory: entries per role, searchable by full text on either backend.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_entries",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("thread_id", sa.String(32)),
        sa.Column("thread_only", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_memory_entries"),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name="fk_memory_entries_thread_id_threads"
        ),
    )
    op.create_index("ix_memory_entries_role_at", "memory_entries", ["role", "at"])
    if op.get_bind().dialect.name == "sqlite":
        # Written with each entry, in the same transaction; never updated (memory is append-only).
        op.execute(
            "CREATE VIRTUAL TABLE memory_search USING fts5("
            "text, entry_id UNINDEXED, tokenize = 'unicode61')"
        )
    else:
        op.execute(
            "ALTER TABLE memory_entries ADD COLUMN search tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED"
        )
        op.execute("CREATE INDEX ix_memory_entries_search ON memory_entries USING gin (search)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE memory_search")
    op.drop_table("memory_entries")
