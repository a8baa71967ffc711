"""Upgrading the schema with Alembic, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection

from core.storage.engine import create_engine

MIGRATIONS = Path(__file__).parent / "migrations"


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> str:
    command.upgrade(_config(connection), "head")
    revision = MigrationContext.configure(connection).get_current_revision()
    return revision or "base"


async def upgrade_schema(url: str) -> str:
    """Bring the database at `url` to the newest revision; return the revision now in force."""
    engine = create_engine(url, pool_size=1, writer=True)
    try:
        async with engine.begin() as connection:
            return await connection.run_sync(_upgrade)
    finally:
        await engine.dispose()
