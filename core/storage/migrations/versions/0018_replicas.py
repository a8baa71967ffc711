"""Replicas: the processes sharing one PostgreSQL database, the leases they hold (a run, a
delivery), the facts every replica must agree on, and what they count together (a turn's tool
calls, how fast one identity posts).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "replicas",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("address", sa.Text),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger, nullable=False),
        sa.Column("stopped_at", sa.BigInteger),
        sa.PrimaryKeyConstraint("id", name="pk_replicas"),
    )
    op.create_table(
        "leases",
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("subject", sa.String(160), nullable=False),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("fence", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("kind", "subject", name="pk_leases"),
    )
    op.create_index("ix_leases_holder", "leases", ["holder"])
    op.create_table(
        "tool_budgets",
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("attempt", sa.String(32), nullable=False),
        sa.Column("allowed", sa.Integer, nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
        sa.Column("refused", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_tool_budgets"),
    )
    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("level", sa.Float, nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_buckets"),
    )
    op.create_table(
        "cluster_facts",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_cluster_facts"),
    )


def downgrade() -> None:
    op.drop_table("cluster_facts")
    op.drop_table("rate_buckets")
    op.drop_table("tool_budgets")
    op.drop_index("ix_leases_holder", "leases")
    op.drop_table("leases")
    op.drop_table("replicas")
