"""The Alembic migrations build exactly the schema the code describes (`core.storage.schema`),
on every backend: no table, column, index or constraint of one is missing from the other.
SQLite's reflection cannot read an index on an expression, so there the one such index
(`ix_persons_email_lower`) is checked by name and by the query plan that uses it."""

from __future__ import annotations

import warnings
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from core.storage import people_store, schema

EXPRESSION_INDEX = "ix_persons_email_lower"


def _described(obj: Any, name: str | None, kind: str, reflected: bool, _other: Any) -> bool:
    """Leave out what the migrations create per backend for full-text search, outside the
    metadata: SQLite's FTS5 table (and its shadow tables), PostgreSQL's tsvector and its index."""
    if kind == "table" and (name or "").startswith(schema.MEMORY_SEARCH):
        return False
    if kind == "column" and name == "search" and obj.table.name == "memory_entries":
        return False
    return not (kind == "index" and name == "ix_memory_entries_search")


def _sqlite_described(obj: Any, name: str | None, kind: str, reflected: bool, o: Any) -> bool:
    return _described(obj, name, kind, reflected, o) and name != EXPRESSION_INDEX


def _differences(connection: Connection) -> list[object]:
    sqlite = connection.dialect.name == "sqlite"
    context = MigrationContext.configure(
        connection,
        opts={"compare_type": True, "include_object": _sqlite_described if sqlite else _described},
    )
    with warnings.catch_warnings():
        if sqlite:
            warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based")
            warnings.filterwarnings("ignore", "autogenerate skipping metadata-specified expression")
        return list(compare_metadata(context, schema.metadata))


def _sqlite_email_lookup_plan(connection: Connection) -> str:
    """What SQLite does for a first contact's lookup by email (the statement people_store.py
    runs)."""
    statement = people_store._WITH_EMAIL.compile(dialect=connection.dialect)
    values = statement.params | {"email": "Ann@Example.com"}
    order = statement.positiontup or ()
    rows = connection.exec_driver_sql(
        f"EXPLAIN QUERY PLAN {statement}", tuple(values[name] for name in order)
    )
    return " | ".join(str(row[-1]) for row in rows)


async def test_the_migrated_database_matches_the_schema(database_url: str) -> None:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            assert await connection.run_sync(_differences) == []
            if engine.dialect.name == "sqlite":
                plan = await connection.run_sync(_sqlite_email_lookup_plan)
                assert f"USING INDEX {EXPRESSION_INDEX}" in plan, plan
    finally:
        await engine.dispose()
