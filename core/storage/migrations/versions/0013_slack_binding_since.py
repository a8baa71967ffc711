"""Slack: each DM binding remembers the event position at which the DM became its conversation,
so that what was said before is not posted into the DM (a DM bound to a conversation that already
had messages, by a link or by an email).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("slack_conversations") as table:
        table.add_column(
            sa.Column("since_position", sa.BigInteger, nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("slack_conversations") as table:
        table.drop_column("since_position")
