"""Turns: an index on when each finished, so that the overview reads the last hour's turns (a
range from an hour ago) instead of every turn ever taken. Nothing that was there changes.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06
"""

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_turns_finished_at", "turns", ["finished_at"])


def downgrade() -> None:
    op.drop_index("ix_turns_finished_at", table_name="turns")
