"""Named operator tokens on every backend (`core.storage.operators_store`): only digests are
stored; a name names one token forever; revoking is final; the configured token is `default`,
registered once, replaced when the settings name another, and never one of the named tokens."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from core.model.errors import Conflict, InvalidInput, NotFound
from core.model.operators import DEFAULT_OPERATOR, token_digest
from core.storage import Database, open_database, schema
from core.storage.rows import to_micros

CONFIGURED = "configured-operator-token-0123456789"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def stored_rows(url: str) -> list[tuple[str, str]]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            t = schema.operator_tokens
            rows = await connection.execute(select(t.c.name, t.c.token_hash).order_by(t.c.name))
            return [(str(row[0]), str(row[1])) for row in rows]
    finally:
        await engine.dispose()


async def test_a_token_is_made_shown_once_and_stored_only_as_its_digest(
    database: Database, database_url: str
) -> None:
    made, token = await database.operators.create("ci")
    assert token.startswith("rco_") and made.name == "ci" and not made.revoked
    assert await stored_rows(database_url) == [("ci", token_digest(token))]
    found = await database.operators.by_token(token)
    assert found is not None and found.name == "ci"
    assert await database.operators.by_token(token + "x") is None
    assert await database.operators.by_token("") is None
    second, other = await database.operators.create("alice-laptop")
    assert other != token
    assert [t.name for t in await database.operators.list()] == ["ci", "alice-laptop"]
    assert (await database.operators.get("alice-laptop")) == second


async def test_a_name_is_never_given_twice_not_even_after_revocation(database: Database) -> None:
    await database.operators.create("ci")
    with pytest.raises(Conflict) as taken:
        await database.operators.create("ci")
    assert taken.value.code == "token_exists"
    await database.operators.revoke("ci")
    with pytest.raises(Conflict) as revoked:
        await database.operators.create("ci")
    assert "revoked" in revoked.value.message
    with pytest.raises(InvalidInput):
        await database.operators.create("Not A Name")


async def test_two_makes_of_one_name_at_once_make_one_token(database: Database) -> None:
    ends = await asyncio.gather(
        *(database.operators.create("race") for _ in range(5)), return_exceptions=True
    )
    made = [e for e in ends if not isinstance(e, BaseException)]
    assert len(made) == 1
    assert all(isinstance(e, Conflict) for e in ends if isinstance(e, BaseException))


async def test_a_revoked_token_is_found_revoked_and_revoking_is_final(database: Database) -> None:
    _, token = await database.operators.create("ci")
    revoked = await database.operators.revoke("ci")
    assert revoked.revoked_at is not None
    found = await database.operators.by_token(token)
    assert found is not None and found.revoked
    with pytest.raises(Conflict) as again:
        await database.operators.revoke("ci")
    assert again.value.code == "token_revoked"
    with pytest.raises(NotFound) as missing:
        await database.operators.revoke("nobody")
    assert missing.value.code == "token_not_found"


async def test_the_configured_token_is_default_until_another_is_configured(
    database: Database, database_url: str
) -> None:
    await database.operators.configure_default(CONFIGURED)
    await database.operators.configure_default(CONFIGURED)  # a restart, or another replica
    assert await stored_rows(database_url) == [(DEFAULT_OPERATOR, token_digest(CONFIGURED))]
    found = await database.operators.by_token(CONFIGURED)
    assert found is not None and found.name == DEFAULT_OPERATOR and found.configured

    await database.operators.revoke(DEFAULT_OPERATOR)
    await database.operators.configure_default(CONFIGURED)  # the same token: still revoked
    still = await database.operators.by_token(CONFIGURED)
    assert still is not None and still.revoked

    await database.operators.configure_default(CONFIGURED + "-new")  # another token configured
    assert await database.operators.by_token(CONFIGURED) is None
    renewed = await database.operators.by_token(CONFIGURED + "-new")
    assert renewed is not None and renewed.name == DEFAULT_OPERATOR and not renewed.revoked


async def test_replicas_registering_the_configured_token_together_make_one_row(
    database: Database, database_url: str
) -> None:
    await asyncio.gather(*(database.operators.configure_default(CONFIGURED) for _ in range(4)))
    assert await stored_rows(database_url) == [(DEFAULT_OPERATOR, token_digest(CONFIGURED))]


async def test_a_named_token_cannot_be_the_configured_one(database: Database) -> None:
    _, token = await database.operators.create("ci")
    with pytest.raises(Conflict) as taken:
        await database.operators.configure_default(token)
    assert taken.value.code == "token_taken"
    assert "'ci'" in taken.value.message


async def test_last_use_moves_forward_only(database_url: str) -> None:
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    try:
        made, _ = await db.operators.create("ci")
        assert made.created_at == clock.now and made.last_used_at is None
        later = clock.now + timedelta(minutes=5)
        await db.operators.touch("ci", to_micros(later))
        await db.operators.touch("ci", to_micros(clock.now))  # an older use, written late
        found = await db.operators.get("ci")
        assert found is not None and found.last_used_at == later
    finally:
        await db.close()
