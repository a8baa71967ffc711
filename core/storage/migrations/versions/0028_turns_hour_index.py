"""Turns: the index on when each finished also holds when it started, how it ended and its run,
so that the overview counts the last hour's turns, their latency and failures from the index
alone, without reading the turns' rows (their prompts and transcripts). Nothing that was there
changes.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06
"""

from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

HOUR = "ix_turns_finished_at_started_at_outcome_run_id"


def upgrade() -> None:
    op.create_index(HOUR, "turns", ["finished_at", "started_at", "outcome", "run_id"])
    op.drop_index("ix_turns_finished_at", table_name="turns")


def downgrade() -> None:
    op.create_index("ix_turns_finished_at", "turns", ["finished_at"])
    op.drop_index(HOUR, table_name="turns")
