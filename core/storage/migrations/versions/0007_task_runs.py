"""One task run per role per task.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.create_unique_constraint("uq_runs_task_id_role", ["task_id", "role"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as runs:
        runs.drop_constraint("uq_runs_task_id_role", type_="unique")
