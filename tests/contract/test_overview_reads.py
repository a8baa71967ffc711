"""The overview's reads of what waits to be delivered (`core.storage.overview_reads`), on every
backend: each Slack role's events past its cursor and its posts in flight; the endpoints by
status and the events past the cursors of those not disabled, the parked ones' share apart. And
on SQLite, the plan of the last hour's read: a range of `ix_turns_finished_at`, never a scan."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine

from core.model.endpoints import EndpointStatus, Filters, Standing
from core.model.participants import ParticipantSet, parse_address
from core.storage import overview_reads
from core.storage.database import Database, upgrade_schema
from core.storage.overview_reads import SlackBacklog

ANN = parse_address("person:ann")
SECRET = "whsec_" + "A" * 43 + "="


async def _say(db: Database, n: int) -> list[int]:
    thread, _ = await db.threads.resolve(ParticipantSet.of([ANN, "person:bo"]))
    return [(await db.threads.post_message(thread.id, ANN, f"m{i}")).position for i in range(n)]


async def test_slack_roles_are_behind_by_the_events_past_their_cursors(database: Database) -> None:
    assert await database.console.slack_backlog() == []
    positions = await _say(database, 5)
    await database.slack.advance("concierge", positions[1])
    await database.slack.advance("helpdesk", positions[-1])
    thread, _ = await database.threads.resolve(ParticipantSet.of([ANN, "person:bo"]))
    page = await database.threads.timeline(thread.id)
    await database.slack.intend("helpdesk", page.events[-1].id, "D1")

    assert await database.console.slack_backlog() == [
        SlackBacklog(role="concierge", behind=3, intents=0),
        SlackBacklog(role="helpdesk", behind=0, intents=1),
    ]


async def test_endpoints_by_status_and_the_events_waiting_on_them(database: Database) -> None:
    empty = await database.console.endpoint_backlog()
    assert (empty.counts, empty.behind, empty.behind_parked) == (
        {"active": 0, "parked": 0, "disabled": 0},
        0,
        0,
    )
    positions = await _say(database, 4)
    await database.endpoints.create(
        url="https://x.example/a", secret=SECRET, filters=Filters(), start=positions[1]
    )  # behind: the events from positions[1] on, 3 of them
    parked = await database.endpoints.create(
        url="https://x.example/p", secret=SECRET, filters=Filters(), start=positions[3]
    )
    disabled = await database.endpoints.create(
        url="https://x.example/d", secret=SECRET, filters=Filters(), start=positions[0]
    )
    await database.endpoints.create(
        url="https://x.example/t", secret=SECRET, filters=Filters(kinds=frozenset({"task"}))
    )
    for endpoint, status in ((parked, EndpointStatus.PARKED), (disabled, EndpointStatus.DISABLED)):
        assert await database.endpoints.record(
            endpoint.id,
            seen=endpoint.cursors,
            cursors=endpoint.cursors,
            standing=Standing(status=status, failures=10, reason="down"),
        )

    found = await database.console.endpoint_backlog()
    assert found.counts == {"active": 2, "parked": 1, "disabled": 1}
    assert found.behind == 3 + 1  # the disabled one and the tasks-only one add nothing
    assert found.behind_parked == 1


async def test_the_last_hour_is_read_by_the_finish_time_index(tmp_path: Path) -> None:
    path = f"{tmp_path}/plan.db"
    await upgrade_schema(f"sqlite+aiosqlite:///{path}")
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            statement = overview_reads.FINISHED_SINCE.compile(dialect=connection.dialect)
            rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", (0,))
            plan = " | ".join(str(row[-1]) for row in rows)
    finally:
        engine.dispose()
    assert "SEARCH turns USING INDEX ix_turns_finished_at (finished_at>?)" in plan, plan
    assert "SEARCH runs USING INDEX" in plan, plan
    assert "SCAN" not in plan, plan
