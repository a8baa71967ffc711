"""Where a message was written: `events.channel` (`web`, `slack`, `api`, …; null for agents).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("channel", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.drop_column("channel")
