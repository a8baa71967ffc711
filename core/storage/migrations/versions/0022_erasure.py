"""A person's erasure: `persons.erased_at`, when they were erased (null for everyone else), and
the timeline's new kind `erased` added to the outbound endpoints that listed every kind there
was (they were made with the default: every kind), so they receive it too.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


# Plain ALTER TABLE on both databases (SQLite 3.35+ drops a column in place): a batch would
# rebuild `persons` on SQLite and lose its expression index on `lower(email)`.


def upgrade() -> None:
    op.add_column("persons", sa.Column("erased_at", sa.BigInteger))
    endpoints = sa.table("endpoints", sa.column("id", sa.String), sa.column("kinds", sa.JSON))
    connection = op.get_bind()
    for endpoint_id, kinds in connection.execute(sa.select(endpoints.c.id, endpoints.c.kinds)):
        if _EVERY_KIND_BEFORE <= set(kinds) and "erased" not in kinds:
            connection.execute(
                endpoints.update()
                .where(endpoints.c.id == endpoint_id)
                .values(kinds=[*kinds, "erased"])
            )


_EVERY_KIND_BEFORE = {
    "message",
    "participant_state_changed",
    "retraction",
    "system",
    "approval_requested",
    "approval_resolved",
    "task",
}


def downgrade() -> None:
    op.drop_column("persons", "erased_at")
