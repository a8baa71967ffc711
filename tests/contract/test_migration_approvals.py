"""Schemas 0020 and 0022 on an older database: an outbound endpoint that wanted every kind of
event there was wants the approval events (0020) and the erasures (0022) too; one that picked
its kinds keeps its pick."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from alembic import command
from sqlalchemy import create_engine, text

from core.storage.migrate import _config, upgrade_schema

EVERY_KIND_BEFORE = ["message", "participant_state_changed", "retraction", "system", "task"]


def test_endpoints_that_wanted_every_kind_want_the_approval_kinds(tmp_path: Path) -> None:
    file = tmp_path / "old.db"
    engine = create_engine(f"sqlite:///{file}")
    with engine.begin() as connection:
        command.upgrade(_config(connection), "0019")
        for endpoint_id, kinds in (("all", EVERY_KIND_BEFORE), ("some", ["message"])):
            connection.execute(
                text(
                    "INSERT INTO endpoints (id, url, secret, kinds, roles, threads, status, "
                    "failures, position, task_position, created_at, updated_at) VALUES (:id, "
                    "'https://x.test/', 'whsec_x', :kinds, '[]', '[]', 'active', 0, 0, 0, 0, 0)"
                ),
                {"id": endpoint_id, "kinds": json.dumps(kinds)},
            )
    engine.dispose()
    asyncio.run(upgrade_schema(f"sqlite+aiosqlite:///{file}"))
    engine = create_engine(f"sqlite:///{file}")
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, kinds FROM endpoints")).all()
        stored: dict[str, str] = {str(row[0]): str(row[1]) for row in rows}
    engine.dispose()
    assert json.loads(stored["all"]) == [
        *EVERY_KIND_BEFORE,
        "approval_requested",
        "approval_resolved",
        "erased",
    ]
    assert json.loads(stored["some"]) == ["message"]
