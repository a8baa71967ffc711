"""A Slack workspace's health (`GET /api/v1/slack/{role}/workspaces`): each delivery receipt
names its workspace (`slack_events.team_id`, indexed with the role and the time received, so
the last event of a workspace is one read), and `slack_errors` keeps the latest refusal Slack
answered a post, update or deletion with in each workspace (`token_revoked`, …). Receipts kept
before it name no workspace; nothing else that was there changes.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("slack_events") as table:
        table.add_column(sa.Column("team_id", sa.String(32)))
    op.create_index(
        "ix_slack_events_role_team_id_received_at",
        "slack_events",
        ["role", "team_id", "received_at"],
    )
    op.create_table(
        "slack_errors",
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("code", sa.String(64), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("role", "team_id", name="pk_slack_errors"),
    )


def downgrade() -> None:
    op.drop_table("slack_errors")
    op.drop_index("ix_slack_events_role_team_id_received_at", table_name="slack_events")
    with op.batch_alter_table("slack_events") as table:
        table.drop_column("team_id")
