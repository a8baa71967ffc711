"""People, their channel identities, one-time link codes, and thread predecessors (merges).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "persons",
        sa.Column("slug", sa.String(64), nullable=False),
        sa.Column("display_name", sa.String(200), nullable=False),
        sa.Column("email", sa.String(254)),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.text("true")),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("merged_into", sa.String(64)),
        sa.PrimaryKeyConstraint("slug", name="pk_persons"),
        sa.ForeignKeyConstraint(
            ["merged_into"], ["persons.slug"], name="fk_persons_merged_into_persons"
        ),
    )
    op.create_table(
        "identities",
        sa.Column("address", sa.String(300), nullable=False),
        sa.Column("person_slug", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("address", name="pk_identities"),
        sa.ForeignKeyConstraint(
            ["person_slug"], ["persons.slug"], name="fk_identities_person_slug_persons"
        ),
    )
    op.create_index("ix_identities_person_slug", "identities", ["person_slug"])
    op.create_table(
        "link_codes",
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("person_slug", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        sa.Column("used_at", sa.BigInteger),
        sa.PrimaryKeyConstraint("code_hash", name="pk_link_codes"),
        sa.ForeignKeyConstraint(
            ["person_slug"], ["persons.slug"], name="fk_link_codes_person_slug_persons"
        ),
    )
    op.create_index("ix_link_codes_expires_at", "link_codes", ["expires_at"])
    op.create_table(
        "thread_predecessors",
        sa.Column("thread_id", sa.String(32), nullable=False),
        sa.Column("predecessor_id", sa.String(32), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("thread_id", "predecessor_id", name="pk_thread_predecessors"),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name="fk_thread_predecessors_thread_id_threads"
        ),
        sa.ForeignKeyConstraint(
            ["predecessor_id"], ["threads.id"], name="fk_thread_predecessors_predecessor_id_threads"
        ),
    )


def downgrade() -> None:
    op.drop_table("thread_predecessors")
    op.drop_index("ix_link_codes_expires_at", table_name="link_codes")
    op.drop_table("link_codes")
    op.drop_index("ix_identities_person_slug", table_name="identities")
    op.drop_table("identities")
    op.drop_table("persons")
