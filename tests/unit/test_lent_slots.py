"""A turn waiting for a person lends its slots back (`core.engine.host.slots.HeldSlots`): every
slot is free while it waits, taken again in order when the wait ends (after the last of two
waits at once), and a turn cancelled while it waits gives back nothing it does not hold."""

from __future__ import annotations

import asyncio

import pytest

from core.engine.host.slots import HeldSlots, semaphore_slot


async def test_slots_are_free_while_lent_and_held_again_after() -> None:
    role, host = asyncio.Semaphore(1), asyncio.Semaphore(1)
    slots = [semaphore_slot(role), semaphore_slot(host)]
    for slot in slots:
        await slot.take()
    held = HeldSlots(slots)
    assert role.locked() and host.locked()
    async with held.lent():
        assert not role.locked() and not host.locked()
        async with held.lent():  # a second wait at once lends nothing more
            assert not role.locked()
        assert not role.locked()  # the first wait still runs: still lent
    assert role.locked() and host.locked()
    for slot in slots:
        await slot.give()
        await slot.give()  # given back once, however often asked
    assert not role.locked() and not host.locked()
    assert role._value == 1 and host._value == 1


async def test_another_turn_runs_in_a_lent_slot() -> None:
    role = asyncio.Semaphore(1)
    slot = semaphore_slot(role)
    await slot.take()
    order: list[str] = []

    async def another_turn() -> None:
        async with role:  # it runs while the first one waits for a person
            order.append("the other turn ran")
            await asyncio.sleep(0)

    async with HeldSlots([slot]).lent():
        other = asyncio.create_task(another_turn())
        await other
    order.append("the wait ended")
    assert order == ["the other turn ran", "the wait ended"]
    assert slot.held and role.locked()


async def test_a_turn_cancelled_while_it_waits_does_not_take_its_slots_again() -> None:
    role = asyncio.Semaphore(1)
    slot = semaphore_slot(role)
    await slot.take()
    held = HeldSlots([slot])
    waiting = asyncio.Event()

    async def wait_for_a_person() -> None:
        async with held.lent():
            waiting.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(wait_for_a_person())
    await waiting.wait()
    await role.acquire()  # someone else has the slot now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not slot.held
    await slot.give()  # nothing to give: the other turn's slot is left alone
    assert role.locked()
