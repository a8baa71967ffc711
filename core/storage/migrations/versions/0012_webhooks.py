"""Webhooks: inbound deliveries recorded once, subscriptions by external key before the task
exists, and the endpoints the gateway delivers its events to (each with its own secret and
cursors).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("delivery_id", sa.String(200), nullable=False),
        sa.Column("received_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("source", "delivery_id", name="pk_webhook_deliveries"),
    )
    op.create_index("ix_webhook_deliveries_received_at", "webhook_deliveries", ["received_at"])
    op.create_table(
        "external_subscriptions",
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("ext_source", sa.String(500), nullable=False),
        sa.Column("ext_key", sa.String(500), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint(
            "run_id", "ext_source", "ext_key", name="pk_external_subscriptions"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_external_subscriptions_run_id_runs"
        ),
    )
    op.create_index(
        "ix_external_subscriptions_ext_source_ext_key",
        "external_subscriptions",
        ["ext_source", "ext_key"],
    )
    op.create_table(
        "endpoints",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("secret", sa.String(200), nullable=False),
        sa.Column("kinds", sa.JSON, nullable=False),
        sa.Column("roles", sa.JSON, nullable=False),
        sa.Column("threads", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("failures", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("task_position", sa.BigInteger, nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_endpoints"),
    )


def downgrade() -> None:
    op.drop_table("endpoints")
    op.drop_index(
        "ix_external_subscriptions_ext_source_ext_key", table_name="external_subscriptions"
    )
    op.drop_table("external_subscriptions")
    op.drop_index("ix_webhook_deliveries_received_at", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
