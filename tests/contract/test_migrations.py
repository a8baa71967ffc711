"""The Alembic migrations build exactly the schema the code describes (`core.storage.schema`),
on every backend: no table, column, index or constraint of one is missing from the other."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from core.storage import schema


def _described(obj: Any, name: str | None, kind: str, reflected: bool, _other: Any) -> bool:
    """Leave out what the migrations create per backend for full-text search, outside the
    metadata: SQLite's FTS5 table (and its shadow tables), PostgreSQL's tsvector and its index."""
    if kind == "table" and (name or "").startswith(schema.MEMORY_SEARCH):
        return False
    if kind == "column" and name == "search" and obj.table.name == "memory_entries":
        return False
    return not (kind == "index" and name == "ix_memory_entries_search")


def _differences(connection: Connection) -> list[object]:
    context = MigrationContext.configure(
        connection, opts={"compare_type": True, "include_object": _described}
    )
    return list(compare_metadata(context, schema.metadata))


async def test_the_migrated_database_matches_the_schema(database_url: str) -> None:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            assert await connection.run_sync(_differences) == []
    finally:
        await engine.dispose()
