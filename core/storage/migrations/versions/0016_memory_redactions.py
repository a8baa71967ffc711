"""Agent memory: redactions. Memory stays append-only; an operator's redaction of an entry is a
record of its own (who, when, why), and recall skips redacted entries.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_redactions",
        sa.Column("entry_id", sa.String(32), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("by", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("entry_id", name="pk_memory_redactions"),
        sa.ForeignKeyConstraint(
            ["entry_id"], ["memory_entries.id"], name="fk_memory_redactions_entry_id_memory_entries"
        ),
    )


def downgrade() -> None:
    op.drop_table("memory_redactions")
