"""Run tokens: opaque bearer tokens naming one run, stored only as digests.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_run_tokens"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_run_tokens_run_id_runs"),
    )


def downgrade() -> None:
    op.drop_table("run_tokens")
