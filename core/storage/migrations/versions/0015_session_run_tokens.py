"""Run tokens: a token minted for an agent session says which session (`session_id`), so that the
run's next session start replaces it and the session's end revokes it; tokens an operator mints
(`POST /api/v1/runs/{id}/token`) have none and stay.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run_tokens") as table:
        table.add_column(sa.Column("session_id", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("run_tokens") as table:
        table.drop_column("session_id")
