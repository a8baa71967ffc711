"""The news of many runs read in one statement (`runs_reads.news_of_runs`, PostgreSQL's one
read for a host's turns at once) is, run by run, what each run's own read gives: blackouts,
retractions, cursors and limits included."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sqlalchemy import Connection

from core.model.membership import ParticipantState
from core.model.participants import ParticipantSet, parse_address
from core.model.runs.run import Run
from core.storage import runs_reads
from core.storage.database import Database
from core.storage.engine import is_sqlite
from core.storage.pages import TimelinePage

ROLE = parse_address("role:concierge")
ACTIVE, REMOVED = ParticipantState.ACTIVE, ParticipantState.REMOVED


def _seen(page: TimelinePage) -> tuple[list[tuple[str, bool]], int | None, bool]:
    return (
        [(e.id, getattr(e, "retracted", False)) for e in page.events],
        page.next,
        page.more,
    )


async def _conversation(database: Database, person: str) -> Run:
    """A conversation with a blackout of the role (removed, then back) and a retraction."""
    thread, _ = await database.threads.resolve(ParticipantSet.of([person, "role:concierge"]))
    author = parse_address(person)
    t = database.threads
    for i in range(3):
        await t.post_message(thread.id, author, f"{person} {i}")
    await t.set_participant_state(thread.id, ROLE, REMOVED)
    await t.post_message(thread.id, author, "away")
    await t.set_participant_state(thread.id, ROLE, ACTIVE)
    taken_back = await t.post_message(thread.id, author, "taken back")
    await t.retract(thread.id, taken_back.id, author, None)
    for i in range(3):
        await t.post_message(thread.id, author, f"{person} after {i}")
    run, _ = await database.runs.ensure_conversation_run(thread.id, "concierge")
    return run


async def test_the_news_of_many_runs_together_is_each_runs_own(
    database: Database, database_url: str
) -> None:
    runs = [
        replace(run, cursor=cursor)
        for person in ("person:alice", "person:bob")
        for run in [await _conversation(database, person)]
        for cursor in (0, 2, 5, 9, 20)
    ]
    reads = database.runs._reads  # the storage's own reads, as the store runs them

    def one(run: Run) -> Callable[[Connection], TimelinePage]:
        assert run.thread_id is not None
        thread_id = run.thread_id
        return lambda c: runs_reads.news(c, thread_id, run.role_address, run.cursor, 4)

    alone = [await reads.transact(one(run)) for run in runs]
    together = await reads.transact(lambda c: runs_reads.news_of_runs(c, runs, 4))
    if is_sqlite(database_url):
        assert together is None  # each turn reads its own
    else:
        assert together is not None
        assert [_seen(p) for p in together] == [_seen(p) for p in alone]
    assert any(p.more for p in alone) and any(not p.events for p in alone)
    assert any(retracted for p in alone for _, retracted in _seen(p)[0])
    away = {e.id for p in alone for e in p.events if getattr(e, "text", "") == "away"}
    assert not away  # the blackout hides it

    inputs = await database.runs.turn_inputs([(r, False) for r in runs], limit=4, recent=5)
    pages = [i.page for i in inputs if not isinstance(i, Exception)]
    assert [_seen(p) for p in pages] == [_seen(p) for p in alone]
