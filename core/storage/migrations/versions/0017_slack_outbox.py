"""Slack: the outbox. The intent to post a timeline event to a DM is committed before the post,
so that a restart finds what may have reached Slack without its ts being recorded, and looks in
the DM's history for it before posting again.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_outbox",
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("message_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("role", "message_id", name="pk_slack_outbox"),
    )


def downgrade() -> None:
    op.drop_table("slack_outbox")
