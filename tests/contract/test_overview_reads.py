"""The overview's reads (`core.storage.overview_reads`, `core.storage.console_store`), on every
backend: the last hour as the database counts it is the hour `core.model.activity.hour_of`
makes of the same turns; the runs counted, and which of those the run host holds were opened;
each Slack role's events past its cursor and its posts in flight; the endpoints by status and
the events past the cursors of those not disabled, the parked ones' share apart. And on SQLite,
the plans of the last hour's reads: a range of the finish-time index that holds every column
they read, never a scan and never a turn's row."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from sqlalchemy import Insert, Select, create_engine, insert
from sqlalchemy.ext.asyncio import create_async_engine

from core.model.activity import MINUTE, FinishedTurn, hour_of, hour_since
from core.model.endpoints import EndpointStatus, Filters, Standing
from core.model.participants import ParticipantSet, parse_address
from core.model.runs.run import RunId, RunStatus, TurnOutcome
from core.storage import overview_reads, schema
from core.storage.database import Database, upgrade_schema
from core.storage.overview_reads import SlackBacklog

ANN = parse_address("person:ann")
SECRET = "whsec_" + "A" * 43 + "="
NOW = 29_416_666 * MINUTE + 42 * 1_000_000 + 7  # 42 s and 7 µs into a minute
SINCE = hour_since(NOW)


async def _store(url: str, statements: list[tuple[Insert, list[dict[str, object]]]]) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            for statement, rows in statements:
                if rows:
                    await connection.execute(statement, rows)
    finally:
        await engine.dispose()


def _run(
    run_id: str, role: str, *, status: str = "ready", session: str | None = None
) -> dict[str, object]:
    return {
        "id": run_id,
        "kind": "task",
        "role": role,
        "task_id": f"t-{run_id}",
        "status": status,
        "session_id": session,
        "created_at": 0,
        "updated_at": 0,
    }


def _turn(n: int, turn: FinishedTurn) -> dict[str, object]:
    return {
        "id": f"turn{n}",
        "run_id": turn.run_id,
        "number": n,
        "session_id": "s",
        "cause": "message",
        "outcome": TurnOutcome.FAILED.value if turn.failed else TurnOutcome.REPLIED.value,
        "cursor_from": 0,
        "cursor_to": 0,
        "queued_at": turn.started_at,
        "started_at": turn.started_at,
        "finished_at": turn.finished_at,
        "prompt": {},
        "steps": [],
        "replies": [],
        "attempts": [],
    }


async def test_the_hour_the_database_counts_is_the_rule_s_hour(
    database: Database, database_url: str
) -> None:
    assert await database.console.last_hour(SINCE) == hour_of([], SINCE)
    drawn = random.Random(18)
    runs = {f"r{i}": ("echo", "broken", "atlas")[i % 3] for i in range(12)}
    turns = []
    for _ in range(400):
        run = drawn.choice(sorted(runs))
        finished = SINCE + drawn.randrange(-5 * MINUTE, 61 * MINUTE)  # some outside the hour
        took = drawn.choice([drawn.randrange(0, 5_000_000), -3])  # a clock a little behind
        failed = drawn.random() < 0.2
        turns.append(
            FinishedTurn(
                run_id=run,
                role=runs[run],
                started_at=finished - took,
                finished_at=finished,
                failed=failed,
            )
        )
    turns.append(
        FinishedTurn(run_id="r0", role="echo", started_at=SINCE, finished_at=SINCE, failed=True)
    )  # the hour's first instant
    await _store(
        database_url,
        [
            (insert(schema.runs), [_run(r, role) for r, role in runs.items()]),
            (insert(schema.turns), [_turn(n, t) for n, t in enumerate(turns)]),
        ],
    )

    counted = await database.console.last_hour(SINCE)
    assert counted == hour_of(turns, SINCE)
    assert 0 < counted.turns < len(turns) and counted.failures  # the draw reached every branch


async def test_runs_are_counted_and_the_held_ones_looked_up(
    database: Database, database_url: str
) -> None:
    empty = await database.console.run_census(())
    assert (empty.total, empty.failed, empty.opened, empty.stored_of) == (0, 0, 0, frozenset())
    runs = [
        _run("a", "echo", session="sa"),  # opened
        _run("b", "echo", session="sb", status=RunStatus.FAILED.value),  # opened, failed
        _run("c", "echo", session="sc"),  # a session never opened
        _run("d", "echo", status=RunStatus.FAILED.value),  # no session yet
    ]
    sessions = [
        {"id": "sa", "run_id": "a", "number": 1, "opened_at": 1, "state": {"session": "x"}},
        {"id": "sb", "run_id": "b", "number": 1, "opened_at": 1, "state": {}},
        {"id": "sc", "run_id": "c", "number": 1, "opened_at": 1, "state": None},
    ]
    await _store(
        database_url,
        [(insert(schema.runs), runs), (insert(schema.run_sessions), sessions)],
    )

    held = [RunId(x) for x in ("a", "c", "gone")] + [RunId(f"n{i}") for i in range(1200)]
    census = await database.console.run_census(held)  # more ids than one IN (…) list takes
    assert (census.total, census.failed, census.opened) == (4, 2, 2)
    assert census.stored_of == {"a", "c"}
    assert census.opened_of == {"a"}


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


def test_the_last_hour_is_counted_from_the_finish_time_index_alone(tmp_path: Path) -> None:
    path = f"{tmp_path}/plan.db"
    asyncio.run(upgrade_schema(f"sqlite+aiosqlite:///{path}"))
    engine = create_engine(f"sqlite:///{path}")
    index = "ix_turns_finished_at_started_at_outcome_run_id"
    try:
        with engine.connect() as connection:

            def plan(statement: Select[Any], values: dict[str, int]) -> str:
                bound = statement.params(values).compile(
                    dialect=connection.dialect, compile_kwargs={"literal_binds": True}
                )
                rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {bound}")
                return " | ".join(str(row[-1]) for row in rows)

            hour = {"since": 0, "until": 1}
            minutes = plan(overview_reads.MINUTES, hour)
            durations = plan(overview_reads.DURATION_AT, {**hour, "at": 0})
            failures = plan(overview_reads.FAILURES, hour)
    finally:
        engine.dispose()
    for read in (minutes, durations, failures):
        assert f"SEARCH turns USING COVERING INDEX {index} (finished_at>? AND finished_at<?)" in (
            read
        ), read
        assert "SCAN" not in read, read
    assert "SEARCH runs USING INDEX" in failures, failures  # the failed turns' runs, by key
