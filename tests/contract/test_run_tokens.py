"""Run tokens on every backend: a token names its run until revoked; a token minted for an agent
session replaces the run's earlier session tokens (not another run's, nor an operator's)."""

from __future__ import annotations

from core.model.participants import ParticipantSet
from core.model.runs.run import Run
from core.storage.database import Database


async def conversation_run(db: Database, person: str) -> Run:
    thread, _ = await db.threads.resolve(ParticipantSet.of([person, "role:echo"]))
    run, _ = await db.runs.ensure_conversation_run(thread.id, "echo")
    return run


async def test_a_session_token_replaces_the_runs_earlier_session_tokens_only(
    database: Database,
) -> None:
    run = await conversation_run(database, "person:ann")
    other = await conversation_run(database, "person:bob")
    operators = await database.runs.mint_token(run.id)
    first = await database.runs.mint_token(run.id, session_id=run.session.id)
    others = await database.runs.mint_token(other.id, session_id=other.session.id)
    assert (await database.runs.by_token(first)).id == run.id  # type: ignore[union-attr]

    second = await database.runs.mint_token(run.id, session_id=run.session.id)

    assert await database.runs.by_token(first) is None
    assert (await database.runs.by_token(second)).id == run.id  # type: ignore[union-attr]
    assert (await database.runs.by_token(operators)).id == run.id  # type: ignore[union-attr]
    assert (await database.runs.by_token(others)).id == other.id  # type: ignore[union-attr]


async def test_a_revoked_token_names_no_run(database: Database) -> None:
    run = await conversation_run(database, "person:ann")
    token = await database.runs.mint_token(run.id, session_id=run.session.id)
    kept = await database.runs.mint_token(run.id)
    await database.runs.revoke_token(token)
    await database.runs.revoke_token(token)  # again: nothing to do, no error
    assert await database.runs.by_token(token) is None
    assert await database.runs.by_token(kept) is not None
