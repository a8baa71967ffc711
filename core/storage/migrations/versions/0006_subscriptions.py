"""Subscriptions of conversation runs to tasks, and each run's cursor over task events.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.add_column(
            sa.Column("task_cursor", sa.BigInteger, nullable=False, server_default=sa.text("0"))
        )
    op.create_table(
        "subscriptions",
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("task_id", sa.String(32), nullable=False),
        sa.Column("since", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "task_id", name="pk_subscriptions"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_subscriptions_run_id_runs"),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name="fk_subscriptions_task_id_tasks"),
    )
    op.create_index("ix_subscriptions_task_id", "subscriptions", ["task_id"])


def downgrade() -> None:
    op.drop_index("ix_subscriptions_task_id", table_name="subscriptions")
    op.drop_table("subscriptions")
    with op.batch_alter_table("runs") as runs:
        runs.drop_column("task_cursor")
