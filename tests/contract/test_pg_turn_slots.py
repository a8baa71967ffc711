"""Turn slots in PostgreSQL (`core.storage.slot_locks`): a slot is one turn's in the whole
cluster, a replica's own included; what is asked at once goes in one round trip; a take whose
turn stopped waiting gives its slot back; a replica's turns get a slot in the order they asked;
a slot a turn gave back is kept for the role's next turn on the replica — held on the server all
along, never once its connection is gone, given back when unused, after `HELD_MOST` and at
close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from core.engine.host.slots import ClusterSlots
from core.model.roles.role import Role
from core.storage.slot_locks import PgTurnSlots
from tests.waiting import eventually

SERIAL = Role.model_validate(
    {
        "name": "serial",
        "display_name": "Serial",
        "runtime": {"kind": "builtin", "agent": "echo"},
        "concurrent_threads": False,
    }
)
"""A role of one slot: slot 0."""


@pytest.fixture
async def two(pg_url: str) -> AsyncIterator[tuple[PgTurnSlots, PgTurnSlots]]:
    """The turn slots of two replicas."""
    a, b = PgTurnSlots(pg_url), PgTurnSlots(pg_url)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


async def test_a_slot_is_held_by_one_turn_even_within_one_replica(
    two: tuple[PgTurnSlots, PgTurnSlots],
) -> None:
    # A session's advisory locks are re-entrant: without the replica's own bookkeeping, a
    # second turn of the same replica would be granted the slot the first holds.
    a, b = two
    taken = await a.try_take("writer", 0)
    assert taken is not None
    assert await a.try_take("writer", 0) is None
    assert await b.try_take("writer", 0) is None
    assert await a.try_take("writer", 1) is not None
    await a.give_back("writer", 0, taken)
    assert await b.try_take("writer", 0) is not None
    assert await a.try_take("writer", 0) is None


async def test_what_turns_ask_at_once_goes_in_one_round_trip(
    two: tuple[PgTurnSlots, PgTurnSlots],
) -> None:
    slots, other = two
    assert await slots.try_take("warm", 0) is not None  # the connection is open
    sent: list[str] = []

    def logged(query: Any) -> None:
        sent.append(query.query)

    slots._connection.add_query_logger(logged)  # type: ignore[union-attr]
    got = await asyncio.gather(*(slots.try_take("many", i) for i in range(20)))
    assert len(sent) == 1
    assert all(g is not None for g in got)
    assert [await other.try_take("many", i) for i in range(20)] == [None] * 20
    sent.clear()
    await asyncio.gather(*(slots.give_back("many", i, g) for i, g in enumerate(got) if g))
    assert len(sent) == 1
    assert all([await other.try_take("many", i) for i in range(20)])


async def test_a_take_whose_turn_stopped_waiting_gives_the_slot_back(
    two: tuple[PgTurnSlots, PgTurnSlots],
) -> None:
    slots, other = two
    asking = asyncio.ensure_future(slots.try_take("cancelled", 0))
    await asyncio.sleep(0)  # asked, not yet answered
    asking.cancel()

    async def free_again() -> bool:
        return await other.try_take("cancelled", 0) is not None

    await eventually(free_again, what="the slot given back")


async def test_a_replicas_turns_get_the_roles_slot_in_the_order_they_asked(pg_url: str) -> None:
    """With every slot taken, a turn that comes later never overtakes one that waits: without
    the order, under contention, a waiting turn could be passed over for as long as it lasts."""
    role = SERIAL
    locks = PgTurnSlots(pg_url)
    slots = ClusterSlots(locks)
    order: list[str] = []
    release = {name: asyncio.Event() for name in "abc"}

    async def turn(name: str) -> None:
        async with slots.turn(role):
            order.append(name)
            await release[name].wait()

    try:
        first = asyncio.ensure_future(turn("a"))
        await eventually(lambda: order == ["a"], what="a's turn holding the slot")
        queued = slots._waiting  # the replica's turns waiting for the role's slot

        waiting = asyncio.ensure_future(turn("b"))
        await eventually(lambda: len(queued["serial"]) == 1, what="b waiting")
        later = asyncio.ensure_future(turn("c"))
        await eventually(lambda: len(queued["serial"]) == 2, what="c waiting after b")
        release["a"].set()
        await eventually(lambda: len(order) == 2, what="the next turn holding the slot")
        assert order == ["a", "b"]
        release["b"].set()
        release["c"].set()
        await asyncio.gather(first, waiting, later)
        assert order == ["a", "b", "c"]
    finally:
        await locks.close()


def _statements(locks: PgTurnSlots) -> list[str]:
    """What is sent on the slots' connection from now on (it is open)."""
    sent: list[str] = []
    assert locks._connection is not None
    locks._connection.add_query_logger(lambda query: sent.append(query.query))
    return sent


async def _given_back_to_the_server(other: PgTurnSlots) -> None:
    """Until the other replica can take the serial role's slot."""

    async def free_again() -> bool:
        return await other.try_take("serial", 0) is not None

    await eventually(free_again, what="the slot given back to the server")


async def _one_turn(slots: ClusterSlots) -> None:
    async with slots.turn(SERIAL):
        pass


async def test_the_next_turn_takes_the_slot_the_last_gave_back_without_a_round_trip(
    two: tuple[PgTurnSlots, PgTurnSlots],
) -> None:
    locks, other = two
    slots = ClusterSlots(locks, warm_for=3600)
    await _one_turn(slots)
    sent = _statements(locks)
    assert await other.try_take("serial", 0) is None  # kept: still held on the server
    async with slots.turn(SERIAL):
        assert await other.try_take("serial", 0) is None
    await _one_turn(slots)
    assert sent == []


@pytest.mark.parametrize(
    ("warm_for", "held_most"),
    [(0.05, 3600.0), (3600.0, 0.0)],
    ids=["kept-unused-past-warm_for", "passed-on-past-held_most"],
)
async def test_a_kept_slot_goes_back_to_the_server(
    two: tuple[PgTurnSlots, PgTurnSlots], warm_for: float, held_most: float
) -> None:
    """Unused for `warm_for`, or held since its take for `held_most`."""
    locks, other = two
    slots = ClusterSlots(locks, warm_for=warm_for, held_most=held_most)
    await _one_turn(slots)
    await _given_back_to_the_server(other)


async def test_closing_gives_the_kept_slots_back(two: tuple[PgTurnSlots, PgTurnSlots]) -> None:
    locks, other = two
    slots = ClusterSlots(locks, warm_for=3600)
    await _one_turn(slots)
    await slots.close()
    assert await other.try_take("serial", 0) is not None


async def test_a_kept_slot_whose_connection_is_gone_is_not_handed_on(
    pg_url: str, two: tuple[PgTurnSlots, PgTurnSlots]
) -> None:
    """The server let go of the slot with the connection: another replica may hold it now,
    so the next turn here takes it on the server, and waits while the other holds it."""
    locks, other = two
    slots = ClusterSlots(locks, warm_for=3600)
    await _one_turn(slots)
    assert locks._connection is not None
    backend = locks._connection.get_server_pid()
    admin = await asyncpg.connect(pg_url.replace("+asyncpg", ""))
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", backend)
    finally:
        await admin.close()
    connection = locks._connection
    await eventually(connection.is_closed, what="the slots' connection seen closed")

    held: list[int] = []

    async def taken_by_the_other() -> bool:
        taken = await other.try_take("serial", 0)
        held.extend([] if taken is None else [taken])
        return taken is not None

    await eventually(taken_by_the_other, what="the other replica holding the slot")
    given_back = False

    async def turn_here() -> bool:
        async with slots.turn(SERIAL):
            return given_back

    here = asyncio.ensure_future(turn_here())
    await eventually(
        lambda: here.done() or len(slots._waiting.get("serial", ())) == 1,
        what="the turn trying for the slot",
    )
    given_back = True
    await other.give_back("serial", 0, held[0])
    assert await here, "the turn ran while the other replica held the slot"
