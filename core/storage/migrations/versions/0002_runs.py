"""Runs, their sessions and turns; the archive boundary of a thread.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as threads:
        threads.add_column(
            sa.Column("archive_before", sa.BigInteger, nullable=False, server_default=sa.text("0"))
        )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("thread_id", sa.String(32)),
        sa.Column("task_id", sa.String(32)),
        sa.Column("cursor", sa.BigInteger, nullable=False, server_default=sa.text("0")),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("failures", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("last_error", sa.Text),
        sa.Column("session_id", sa.String(32)),
        sa.Column("last_turn", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], name="fk_runs_thread_id_threads"),
        sa.UniqueConstraint("thread_id", "role", name="uq_runs_thread_id_role"),
    )
    op.create_table(
        "run_sessions",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("opened_at", sa.BigInteger, nullable=False),
        sa.Column("state", sa.JSON),
        sa.PrimaryKeyConstraint("id", name="pk_run_sessions"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_run_sessions_run_id_runs"),
        sa.UniqueConstraint("run_id", "number", name="uq_run_sessions_run_id_number"),
    )
    op.create_table(
        "turns",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("session_id", sa.String(32), nullable=False),
        sa.Column("cause", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("cursor_from", sa.BigInteger, nullable=False),
        sa.Column("cursor_to", sa.BigInteger, nullable=False),
        sa.Column("queued_at", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("finished_at", sa.BigInteger, nullable=False),
        sa.Column("prompt", sa.JSON, nullable=False),
        sa.Column("steps", sa.JSON, nullable=False),
        sa.Column("replies", sa.JSON, nullable=False),
        sa.Column("attempts", sa.JSON, nullable=False),
        sa.Column("error", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_turns"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_turns_run_id_runs"),
        sa.UniqueConstraint("run_id", "number", name="uq_turns_run_id_number"),
    )


def downgrade() -> None:
    op.drop_table("turns")
    op.drop_table("run_sessions")
    op.drop_table("runs")
    with op.batch_alter_table("threads") as threads:
        threads.drop_column("archive_before")
