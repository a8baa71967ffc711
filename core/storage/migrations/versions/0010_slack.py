"""The Slack channel: deliveries seen, DMs bound to threads, Slack messages mapped to ours,
and how far each role's delivery has posted.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slack_events",
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("received_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("event_id", name="pk_slack_events"),
    )
    op.create_index("ix_slack_events_received_at", "slack_events", ["received_at"])
    op.create_table(
        "slack_conversations",
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("thread_id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("role", "team_id", "channel_id", name="pk_slack_conversations"),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name="fk_slack_conversations_thread_id_threads"
        ),
    )
    op.create_index(
        "ix_slack_conversations_role_thread_id", "slack_conversations", ["role", "thread_id"]
    )
    op.create_table(
        "slack_messages",
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("ts", sa.String(32), nullable=False),
        sa.Column("message_id", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32)),
        sa.Column("outbound", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("role", "channel_id", "ts", name="pk_slack_messages"),
    )
    op.create_index(
        "ix_slack_messages_role_message_id", "slack_messages", ["role", "message_id"], unique=True
    )
    op.create_table(
        "slack_cursors",
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("role", name="pk_slack_cursors"),
    )


def downgrade() -> None:
    op.drop_table("slack_cursors")
    op.drop_index("ix_slack_messages_role_message_id", table_name="slack_messages")
    op.drop_table("slack_messages")
    op.drop_index("ix_slack_conversations_role_thread_id", table_name="slack_conversations")
    op.drop_table("slack_conversations")
    op.drop_index("ix_slack_events_received_at", table_name="slack_events")
    op.drop_table("slack_events")
