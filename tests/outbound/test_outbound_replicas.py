"""Two replicas on one PostgreSQL database deliver an endpoint as one gateway: whichever replica
a message is posted through, the receiver gets each event exactly once — not once per replica —
in order, from the replica holding the endpoint's lease; when that one stops, the other takes
the endpoint over and goes on from where it was, still sending nothing twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from core.model.leases import LeaseKind
from core.storage.database import Database, open_database
from gateway.settings import Settings
from tests.api.conftest import Api
from tests.conftest import _empty_postgres
from tests.outbound.conftest import Receiver, gateway, outbound_settings, register
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

ALICE, BO = "person:alice", "person:bo"
WIDGET_KEY = "outbound-replicas-widget-key-0123456789abcdef"
"""Replicas of one database share their widget key (or the second is refused at start)."""


@pytest.fixture
async def shared(postgres_database: str) -> AsyncIterator[Database]:
    """The one database both replicas serve, empty; the test's own look at it."""
    await _empty_postgres(postgres_database)
    database = await open_database(postgres_database)
    try:
        yield database
    finally:
        await database.close()


def _replica(tmp_path: Path, name: str, database_url: str) -> Settings:
    var = tmp_path / name
    var.mkdir()
    return outbound_settings(
        var,
        database_url=database_url,
        replica_id=name,
        replica_timeout=2,
        widget_key=WIDGET_KEY,
    )


async def _holder(db: Database, endpoint_id: str) -> str:
    lease = await db.leases.get(LeaseKind.ENDPOINT, endpoint_id)
    return lease.holder if lease is not None and lease.held else ""


def _sent(receiver: Receiver, path: str, n: int) -> list[str] | None:
    got = receiver.at(path)
    return [r.id for r in got] if len(got) >= n else None


async def _all_sent(receiver: Receiver, n: int) -> bool:
    return all(_sent(receiver, path, n) for path in PATHS)


PATHS = ("/hook", "/other")


async def test_endpoints_are_delivered_once_by_one_replica_and_taken_over_when_it_stops(
    tmp_path: Path, receiver: Receiver, shared: Database, postgres_database: str
) -> None:
    async with AsyncExitStack() as a_serving, AsyncExitStack() as b_serving:
        a = await a_serving.enter_async_context(gateway(_replica(tmp_path, "a", postgres_database)))
        # One endpoint both replicas find at their start; one registered through the other
        # replica while both serve (found by the first one's look at the endpoints).
        made = [await register(a, receiver.url("/hook"), kinds=["message"])]
        b = await b_serving.enter_async_context(gateway(_replica(tmp_path, "b", postgres_database)))
        made.append(await register(b, receiver.url("/other"), kinds=["message"]))
        thread = await a.thread(ALICE, BO)
        replicas: dict[str, Api] = {"a": a, "b": b}
        sent: list[dict[str, Any]] = []
        for i in range(30):
            api = (a, b)[i % 2]
            sent.append(await api.say(thread["id"], ALICE, f"message {i}"))

        await eventually(lambda: _all_sent(receiver, 30), what="30 events to each endpoint")
        holders = [await eventually(partial(_holder, shared, e["id"])) for e in made]
        # Whatever a replica not holding an endpoint might send would have come before the
        # holder's next delivery: one more event, through each replica.
        for api in (a, b):
            sent.append(await api.say(thread["id"], ALICE, f"message {len(sent)}"))
        await eventually(lambda: _all_sent(receiver, 32), what="the 32nd event")
        for path in PATHS:
            assert _sent(receiver, path, 0) == [e["id"] for e in sent], f"{path}: once, in order"
        assert all(r.ok for r in receiver.got)

        # A replica stops cleanly: the other takes its endpoints over and goes on.
        stopping = holders[0]
        survivor = "b" if stopping == "a" else "a"
        await (a_serving if stopping == "a" else b_serving).aclose()
        for i in range(32, 40):
            sent.append(await replicas[survivor].say(thread["id"], ALICE, f"message {i}"))
        await eventually(lambda: _all_sent(receiver, 40), what="40 events to each endpoint")
        assert [await _holder(shared, e["id"]) for e in made] == [survivor, survivor]
        sent.append(await replicas[survivor].say(thread["id"], ALICE, "the last one"))
        await eventually(lambda: _all_sent(receiver, 41), what="the last event")
        for path in PATHS:
            assert _sent(receiver, path, 0) == [e["id"] for e in sent], f"{path}: once, in order"
        for e in made:  # the cursors moved past it, by the survivor
            await eventually(partial(_cursor_at, shared, e["id"], sent[-1]["position"]))


async def _cursor_at(db: Database, endpoint_id: str, position: int) -> bool:
    return (await db.endpoints.get(endpoint_id)).cursors.position == position
