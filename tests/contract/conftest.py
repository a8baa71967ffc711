"""Fixtures of the storage contract tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.storage.database import Database, open_database


@pytest.fixture
def pg_url(database_url: str) -> str:
    """The PostgreSQL database's URL; a test that uses it is skipped on SQLite."""
    if "postgresql" not in database_url:
        pytest.skip("a PostgreSQL test")
    return database_url


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[Database]:
    """The storage on PostgreSQL; a test that uses it is skipped on SQLite."""
    db = await open_database(pg_url)
    try:
        yield db
    finally:
        await db.close()
