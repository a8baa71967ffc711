"""Named operator tokens (`operator_tokens`, only their digests) and the audit trail of operator
actions (`audit_records`, numbered by a counter of its own in `stream_positions`). Nothing that
was there changes; the configured token is registered as `default` when the gateway starts.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "operator_tokens",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("last_used_at", sa.BigInteger),
        sa.Column("revoked_at", sa.BigInteger),
        sa.PrimaryKeyConstraint("name", name="pk_operator_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_operator_tokens_token_hash"),
    )
    op.create_table(
        "audit_records",
        sa.Column("position", Position, nullable=False, autoincrement=False),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("detail", sa.JSON, nullable=False),
        sa.Column("request_id", sa.String(64)),
        sa.PrimaryKeyConstraint("position", name="pk_audit_records"),
    )
    op.create_index("ix_audit_records_at", "audit_records", ["at"])
    op.create_index("ix_audit_records_actor_position", "audit_records", ["actor", "position"])
    op.create_index("ix_audit_records_action_position", "audit_records", ["action", "position"])
    op.execute("INSERT INTO stream_positions (stream, value) VALUES ('audit', 0)")


def downgrade() -> None:
    op.execute("DELETE FROM stream_positions WHERE stream = 'audit'")
    op.drop_table("audit_records")
    op.drop_table("operator_tokens")
