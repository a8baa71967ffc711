"""Tasks and their events, in a position stream of their own.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("assignee", sa.String(64)),
        sa.Column("ext_source", sa.String(500)),
        sa.Column("ext_key", sa.String(500)),
        sa.Column("ext_url", sa.String(500)),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
        sa.UniqueConstraint("ext_source", "ext_key", name="uq_tasks_ext_source_ext_key"),
    )
    op.create_index("ix_tasks_assignee_status", "tasks", ["assignee", "status"])
    op.create_table(
        "task_events",
        sa.Column("position", Position, nullable=False, autoincrement=False),
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("task_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_name", sa.String(500), nullable=False),
        sa.Column("run_id", sa.String(32)),
        sa.Column("changes", sa.JSON, nullable=False),
        sa.Column("text", sa.Text),
        sa.PrimaryKeyConstraint("position", name="pk_task_events"),
        sa.UniqueConstraint("id", name="uq_task_events_id"),
        sa.UniqueConstraint("task_id", "seq", name="uq_task_events_task_id_seq"),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name="fk_task_events_task_id_tasks"),
    )
    op.execute("INSERT INTO stream_positions (stream, value) VALUES ('task_events', 0)")


def downgrade() -> None:
    op.execute("DELETE FROM stream_positions WHERE stream = 'task_events'")
    op.drop_table("task_events")
    op.drop_index("ix_tasks_assignee_status", table_name="tasks")
    op.drop_table("tasks")
