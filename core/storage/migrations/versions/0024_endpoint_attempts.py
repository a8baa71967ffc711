"""Each outbound endpoint's delivery log (`endpoint_attempts`: every attempt to deliver an event,
what it answered, the standing it left; the newest few per endpoint). Nothing that was there
changes; endpoints registered before start with an empty log.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "endpoint_attempts",
        sa.Column("endpoint_id", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("event_id", sa.String(32), nullable=False),
        sa.Column("event_type", sa.String(64), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("http_status", sa.Integer),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("delivered", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("endpoint_id", "seq", name="pk_endpoint_attempts"),
        sa.ForeignKeyConstraint(
            ["endpoint_id"], ["endpoints.id"], name="fk_endpoint_attempts_endpoint_id_endpoints"
        ),
    )


def downgrade() -> None:
    op.drop_table("endpoint_attempts")
