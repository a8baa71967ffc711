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

A slot a turn gives back is kept by the replica for a moment (`WARM_FOR`, 50 ms) before it goes
back to the server: the role's next turn on this replica takes it without a round trip — under
load, most do. A slot kept so passes from turn to turn for `HELD_MOST` (1 s) from its take at
most; it then goes back to the server, and this replica's turns waiting for the role try again
only after their wait, so that another replica's waiting turns get their chance. A kept slot is
held on the server all along (the limit counts it), and one whose connection has gone is
dropped, never handed on.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from core.model.roles.role import Role
from core.storage.slot_locks import PgTurnSlots

log = logging.getLogger("rolecall.host")

WAIT_FIRST = 0.01
WAIT_MOST = 0.1
WARM_FOR = 0.05
"""Seconds a slot given back stays with the replica for its role's next turn."""
HELD_MOST = 1.0
"""Seconds from a slot's take on the server during which it may pass from turn to turn."""


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


@dataclass(slots=True, eq=False)
class _Taken:
    """A cluster slot this replica holds on the server."""

    index: int
    generation: int
    since: float
    """When it was taken on the server (`time.monotonic`)."""
    cooling: asyncio.TimerHandle | None = None
    """While no turn holds it: its give-back to the server, `WARM_FOR` after the last turn."""


class ClusterSlots:
    def __init__(
        self, locks: PgTurnSlots, *, warm_for: float = WARM_FOR, held_most: float = HELD_MOST
    ) -> None:
        self._locks = locks
        self._warm_for = warm_for
        self._held_most = held_most
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        """Per role, this replica's turns waiting for one of its slots, first come first."""
        self._given: dict[str, asyncio.Event] = {}
        """Per role, set when a turn of this replica gives one of its slots back."""
        self._warm: dict[str, list[_Taken]] = {}
        """Per role, the slots given back by this replica's turns and kept for the next."""
        self._giving: set[asyncio.Task[None]] = set()
        self._closed = False

    @contextlib.asynccontextmanager
    async def turn(self, role: Role) -> AsyncIterator[Slot | None]:
        taken: list[_Taken] = []

        async def take() -> None:
            taken.append(await self._take(role))

        async def give() -> None:
            self._give(role.name, taken.pop())

        slot = Slot(take, give)
        await slot.take()
        try:
            yield slot
        finally:
            await slot.give()

    async def close(self) -> None:
        """Give every kept slot back (the turns have ended): after this, slots go straight back."""
        self._closed = True
        for role, warm in self._warm.items():
            for kept in warm:
                self._give_back(role, kept)
        self._warm.clear()
        if self._giving:
            await asyncio.wait(self._giving)

    def _give(self, role: str, given: _Taken) -> None:
        """A turn gives its slot back: kept for the role's next turn here, unless it has passed
        from turn to turn long enough (or its connection is gone)."""
        fresh = time.monotonic() - given.since < self._held_most
        if self._closed or not fresh or not self._locks.holds(role, given.index, given.generation):
            self._give_back(role, given)
            if fresh:  # else this replica's waiting turns let other replicas' try first
                self._given.setdefault(role, asyncio.Event()).set()
            return
        loop = asyncio.get_running_loop()
        given.cooling = loop.call_later(self._warm_for, self._cool, role, given)
        self._warm.setdefault(role, []).append(given)
        self._given.setdefault(role, asyncio.Event()).set()

    def _cool(self, role: str, kept: _Taken) -> None:
        warm = self._warm.get(role, [])
        if kept in warm:
            warm.remove(kept)
            self._give_back(role, kept)

    def _give_back(self, role: str, given: _Taken) -> None:
        if given.cooling is not None:
            given.cooling.cancel()
        task = asyncio.ensure_future(self._send_back(role, given))
        self._giving.add(task)
        task.add_done_callback(self._giving.discard)

    async def _send_back(self, role: str, given: _Taken) -> None:
        try:
            await self._locks.give_back(role, given.index, given.generation)
        except Exception as error:  # gone with its connection anyway
            log.warning("a turn slot of role:%s was not given back: %s", role, error)

    def _kept(self, role: str) -> _Taken | None:
        """A slot this replica kept for the role's next turn, if one is still held."""
        warm = self._warm.get(role)
        while warm:
            kept = warm.pop()
            assert kept.cooling is not None
            kept.cooling.cancel()
            kept.cooling = None
            if self._locks.holds(role, kept.index, kept.generation):
                return kept
            self._give_back(role, kept)  # gone with its connection: nothing is sent
        return None

    async def _take(self, role: Role) -> _Taken:
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

    async def _try_until_taken(self, role: Role) -> _Taken:
        limit = limit_of(role)
        given = self._given.setdefault(role.name, asyncio.Event())
        wait = WAIT_FIRST
        while True:
            given.clear()
            if (kept := self._kept(role.name)) is not None:
                return kept
            first = random.randrange(limit)
            for step in range(limit):
                index = (first + step) % limit
                generation = await self._locks.try_take(role.name, index)
                if generation is not None:
                    return _Taken(index, generation, time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(given.wait(), wait)
            wait = min(wait * 2, WAIT_MOST)
