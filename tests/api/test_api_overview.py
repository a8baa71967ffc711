"""`GET /api/v1/overview` over real HTTP, after real turns: an echo role's two round trips and a
`broken` role's failed turn (`tests.console.conftest`, whose gateway serves both). The last hour
counts the three turns in the minutes they finished, the failure by role and run, and the p50 and
p95 of exactly the durations the runs' transcripts show; deliveries and replicas are there; the
answer is the documented one; the route takes no parameter and needs the operator token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from core.model.activity import nearest_rank
from tests.api.openapi_doc import Document
from tests.console.conftest import Console, console_app, serve_console
from tests.serving import free_port
from tests.waiting import eventually


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    port = free_port()
    async with serve_console(console_app(tmp_path, port), port, tmp_path / "t.db") as served:
        yield served


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _turns(console: Console, thread: str, status: str, count: int) -> list[dict[str, Any]]:
    """The turns of the thread's run, once it has taken `count` and runs none, in `status`."""

    async def settled() -> list[dict[str, Any]] | None:
        runs = (await console.api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        if not runs or runs[0]["turns"] < count or runs[0]["running"]:
            return None
        if runs[0]["status"] != status:
            return None
        turns = await console.api.get(f"/api/v1/runs/{runs[0]['id']}/turns")
        listed: list[dict[str, Any]] = turns.body["turns"]
        return listed

    return await eventually(settled, what=f"{count} turns of {thread}, {status}")


async def test_the_last_hour_counts_turns_failures_and_their_latency(console: Console) -> None:
    api = console.api
    echo = (await api.thread("person:ann", "role:echo"))["id"]
    broken = (await api.thread("person:bob", "role:broken"))["id"]
    await api.say(echo, "person:ann", "one")
    await _turns(console, echo, "ready", 1)
    await api.say(echo, "person:ann", "two")
    echoed = await _turns(console, echo, "ready", 2)
    await api.say(broken, "person:bob", "hello")
    failed = await _turns(console, broken, "failed", 1)

    reply = await api.get("/api/v1/overview")
    assert reply.status == 200, reply.text
    Document().check("GET", "/api/v1/overview", reply)
    figures = reply.body
    hour = figures["last_hour"]

    assert (hour["turns"], hour["failed"], figures["failures_last_hour"]) == (3, 1, 1)
    assert hour["per_minute"] == 0.05
    assert hour["failures"] == [{"role": "broken", "turns": 1, "runs": 1}]
    minutes = hour["minutes"]
    assert len(minutes) == 60 and minutes[0]["at"] == hour["since"]
    starts = [_at(m["at"]) for m in minutes]
    assert all(b - a == timedelta(minutes=1) for a, b in pairwise(starts))
    assert starts[-1] <= _at(figures["at"]) < starts[-1] + timedelta(minutes=1)
    assert sum(m["turns"] for m in minutes) == 3 and sum(m["failed"] for m in minutes) == 1
    for turn in [*echoed, *failed]:  # each in the minute it finished
        finished = _at(turn["finished_at"]).replace(second=0, microsecond=0)
        minute = minutes[starts.index(finished)]
        assert minute["turns"] >= 1
        if turn["outcome"] == "failed":
            assert minute["failed"] == 1

    durations = sorted(
        (_at(t["finished_at"]) - _at(t["started_at"])) // timedelta(microseconds=1)
        for t in [*echoed, *failed]
    )
    assert hour["latency_ms"] == {
        "p50": nearest_rank(durations, 0.5) / 1000,
        "p95": nearest_rank(durations, 0.95) / 1000,
    }

    deliveries = figures["deliveries"]
    assert deliveries["slack"] == []  # no role here has a Slack app
    assert deliveries["endpoints"] == {
        "active": 0,
        "parked": 0,
        "disabled": 0,
        "behind": 0,
        "behind_parked": 0,
    }
    assert deliveries["widget"] == {"streams": 0, "queued": 0}
    assert figures["replicas"] == {"total": 1, "live": 1}


async def test_an_hour_without_turns_and_what_the_route_refuses(console: Console) -> None:
    figures = (await console.api.get("/api/v1/overview")).body
    hour = figures["last_hour"]
    assert (hour["turns"], hour["failed"], hour["latency_ms"], hour["failures"]) == (0, 0, None, [])
    assert hour["per_minute"] == 0
    assert [m["turns"] for m in hour["minutes"]] == [0] * 60

    refused = await console.api.get("/api/v1/overview?since=1")
    assert "since" in refused.error(422, "unknown_parameter")
    (await console.api.get("/api/v1/overview", token=None)).error(401)
