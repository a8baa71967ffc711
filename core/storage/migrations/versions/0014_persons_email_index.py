"""People: an index on the lower-cased email, which a first contact that joins by email looks up
(`lower(email) = lower(:email)`), so that it reads the few persons with that email instead of all.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_persons_email_lower", "persons", [sa.text("lower(email)")])


def downgrade() -> None:
    op.drop_index("ix_persons_email_lower", table_name="persons")
