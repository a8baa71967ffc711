"""Agent memory: redactions, and payloads every backend can compare.

Memory stays append-only; an operator's redaction of an entry is a record of its own (who, when,
why), and recall skips redacted entries.

On PostgreSQL, `memory_entries.payload` becomes `jsonb`. Older versions stored it as `json`, which
keeps any text that parses — `\\u0000`, lone surrogates such as `\\ud800` — while the `jsonb`
comparison of a recall's `where` filters refused such an entry, failing every filtered recall that
could see it. Before the column changes type, the rows whose text names such an escape are mended
as reading mends them (`core.model.memory.payload_from_storage`: NULs dropped, lone surrogates replaced
by U+FFFD), with their words (`text`) to match; every other row is converted as it is. From then
on PostgreSQL itself refuses such a payload. SQLite's rows are left as they are: its JSON
functions can read all of them but `NaN`/`Infinity`, which recall guards against
(`core.storage.memory_store`).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

import json

import sqlalchemy as sa
from alembic import op

from core.model.memory import payload_from_storage, text_of

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# Any `\u0000` or surrogate escape (a superset of the rows `jsonb` refuses: a valid pair, or an
# escaped backslash before `u`, is a candidate too, and left as it is by the mending).
_SUSPECT = r"\\u(0000|[dD][89a-fA-F])"


def upgrade() -> None:
    op.create_table(
        "memory_redactions",
        sa.Column("entry_id", sa.String(32), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("by", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("entry_id", name="pk_memory_redactions"),
        sa.ForeignKeyConstraint(
            ["entry_id"], ["memory_entries.id"], name="fk_memory_redactions_entry_id_memory_entries"
        ),
    )
    connection = op.get_bind()
    if connection.dialect.name == "sqlite":
        return
    suspects = connection.execute(
        sa.text("SELECT id, payload::text FROM memory_entries WHERE payload::text ~ :suspect"),
        {"suspect": _SUSPECT},
    ).all()
    for entry_id, stored in suspects:
        payload, mended = payload_from_storage(stored)
        if mended:
            connection.execute(
                sa.text(
                    "UPDATE memory_entries SET payload = CAST(:payload AS json), text = :text "
                    "WHERE id = :id"
                ),
                {"payload": json.dumps(payload), "text": text_of(payload), "id": entry_id},
            )
    op.execute("ALTER TABLE memory_entries ALTER COLUMN payload TYPE jsonb USING payload::jsonb")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.execute("ALTER TABLE memory_entries ALTER COLUMN payload TYPE json USING payload::json")
    op.drop_table("memory_redactions")
