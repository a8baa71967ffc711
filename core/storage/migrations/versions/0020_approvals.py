"""Approvals: the timeline's `approval_requested` / `approval_resolved` events keep what has no
column of their own in `events.detail`; an approval is resolved at most once (a partial unique
index on the resolution's target); `pending_approvals` lists those not resolved yet. Outbound
endpoints that wanted every kind of event before (every kind there was, listed) want the two new
kinds too.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("detail", sa.JSON(none_as_null=True), nullable=True))
    op.create_index(
        "ux_events_approval_resolution",
        "events",
        ["target"],
        unique=True,
        sqlite_where=sa.text("kind = 'approval_resolved'"),
        postgresql_where=sa.text("kind = 'approval_resolved'"),
    )
    op.create_table(
        "pending_approvals",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("thread_id", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name="fk_pending_approvals_thread_id_threads"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_pending_approvals"),
    )
    op.create_index("ix_pending_approvals_thread_id", "pending_approvals", ["thread_id"])
    op.create_index("ix_pending_approvals_expires_at", "pending_approvals", ["expires_at"])
    endpoints = sa.table("endpoints", sa.column("id", sa.String), sa.column("kinds", sa.JSON))
    connection = op.get_bind()
    for endpoint_id, kinds in connection.execute(sa.select(endpoints.c.id, endpoints.c.kinds)):
        if _EVERY_KIND_BEFORE <= set(kinds):
            connection.execute(
                endpoints.update()
                .where(endpoints.c.id == endpoint_id)
                .values(kinds=[*kinds, *(k for k in _NEW_KINDS if k not in kinds)])
            )


_EVERY_KIND_BEFORE = {"message", "participant_state_changed", "retraction", "system", "task"}
_NEW_KINDS = ("approval_requested", "approval_resolved")


def downgrade() -> None:
    op.drop_table("pending_approvals")
    op.drop_index("ux_events_approval_resolution", table_name="events")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("detail")
