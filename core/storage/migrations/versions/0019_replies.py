"""Timeline: a role's message records the person's message it answers (`in_reply_to`), taken
from what caused the turn that wrote it; null for a message on the role's own initiative.
Messages written before this revision have none.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("in_reply_to", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.drop_column("in_reply_to")
