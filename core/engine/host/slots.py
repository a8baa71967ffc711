"""A turn's slots: its role's across every replica (`max_concurrent_turns`; one for a role with
`concurrent_threads: false`), on top of this host's own slots — and lending them back while the
turn waits for a person.

`Slot` is one slot a turn holds, which it can give back and take again; `HeldSlots` are all of
a turn's, lent back together while it waits for a person's answer (`lent`) so that a question
left open for minutes keeps no other conversation waiting, and taken again, in the order they
were first taken, before the turn goes on.

`SoleSlots` is the one-process case: the host's semaphores already are the whole limit.
`ClusterSlots` takes one of the role's slots in the database (`core.storage.slot_locks`) for
the length of a turn: it tries the role's slots, starting from a random one so replicas do not
queue on the first; when every slot is taken it waits (10 ms, doubling up to 100 ms, or until a
turn of this replica gives a slot back) and tries again. A replica's turns wait in the order
they came, only the first of them trying: under contention a turn that just came would
otherwise keep overtaking one that has waited, for as long as the contention lasts. Only a turn
holds a cluster slot — reading the news, or finding there is none, does not.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

from core.model.roles.role import Role
from core.storage.slot_locks import PgTurnSlots

log = logging.getLogger("rolecall.host")

WAIT_FIRST = 0.01
WAIT_MOST = 0.1


def limit_of(role: Role) -> int:
    return role.max_concurrent_turns if role.concurrent_threads else 1


class Slot:
    """One slot a turn holds. It is given back at most once for each time it was taken, so a
    turn cancelled while it waited to take a slot again gives back only what it holds."""

    def __init__(
        self, take: Callable[[], Awaitable[None]], give: Callable[[], Awaitable[None]]
    ) -> None:
        self._take = take
        self._give = give
        self.held = False

    async def take(self) -> None:
        if not self.held:
            await self._take()
            self.held = True

    async def give(self) -> None:
        if self.held:
            self.held = False
            await self._give()


def semaphore_slot(semaphore: asyncio.Semaphore) -> Slot:
    async def take() -> None:
        await semaphore.acquire()

    async def give() -> None:
        semaphore.release()

    return Slot(take, give)


class HeldSlots:
    """The slots of a running turn, in the order it took them."""

    def __init__(self, slots: Sequence[Slot]) -> None:
        self._slots = tuple(slots)
        self._lenders = 0

    @contextlib.asynccontextmanager
    async def lent(self) -> AsyncIterator[None]:
        """Give every slot back for the length of the block, and take them again after it (after
        the last of several blocks at once: an agent may wait for two answers together). A turn
        cancelled meanwhile does not wait for its slots to end: it gives back only what it
        holds."""
        self._lenders += 1
        cancelled = False
        try:
            if self._lenders == 1:
                for slot in reversed(self._slots):
                    await slot.give()
            yield
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            self._lenders -= 1
            if self._lenders == 0 and not cancelled:
                for slot in self._slots:
                    await slot.take()


class TurnSlots(Protocol):
    def turn(self, role: Role) -> contextlib.AbstractAsyncContextManager[Slot | None]: ...


class SoleSlots:
    @contextlib.asynccontextmanager
    async def turn(self, role: Role) -> AsyncIterator[Slot | None]:
        yield None


class ClusterSlots:
    def __init__(self, locks: PgTurnSlots) -> None:
        self._locks = locks
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        """Per role, this replica's turns waiting for one of its slots, first come first."""
        self._given: dict[str, asyncio.Event] = {}
        """Per role, set when a turn of this replica gives one of its slots back."""

    @contextlib.asynccontextmanager
    async def turn(self, role: Role) -> AsyncIterator[Slot | None]:
        taken: list[tuple[int, int]] = []

        async def take() -> None:
            taken.append(await self._take(role))

        async def give() -> None:
            index, generation = taken.pop()
            try:
                await self._locks.give_back(role.name, index, generation)
            except Exception as error:  # gone with its connection anyway
                log.warning("a turn slot of role:%s was not given back: %s", role.name, error)
            self._given.setdefault(role.name, asyncio.Event()).set()

        slot = Slot(take, give)
        await slot.take()
        try:
            yield slot
        finally:
            await slot.give()

    async def _take(self, role: Role) -> tuple[int, int]:
        """One of the role's slots. This replica's turns wait for them in the order they came:
        only the first tries (a turn that just came never overtakes one that waited), and a slot
        given back here lets it try again at once."""
        waiting = self._waiting.setdefault(role.name, collections.deque())
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting.append(mine)
        if waiting[0] is mine:
            mine.set_result(None)
        try:
            await mine
            return await self._try_until_taken(role)
        finally:
            waiting.remove(mine)
            if waiting and not waiting[0].done():
                waiting[0].set_result(None)

    async def _try_until_taken(self, role: Role) -> tuple[int, int]:
        limit = limit_of(role)
        given = self._given.setdefault(role.name, asyncio.Event())
        wait = WAIT_FIRST
        while True:
            given.clear()
            first = random.randrange(limit)
            for step in range(limit):
                index = (first + step) % limit
                generation = await self._locks.try_take(role.name, index)
                if generation is not None:
                    return index, generation
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(given.wait(), wait)
            wait = min(wait * 2, WAIT_MOST)
