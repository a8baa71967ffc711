"""A role's turn slots across every replica (`max_concurrent_turns`; one for a role with
`concurrent_threads: false`), on top of this host's own slots.

`SoleSlots` is the one-process case: the host's semaphores already are the whole limit.
`ClusterSlots` takes one of the role's slots in the database (`core.storage.slot_locks`) for
the length of a turn: it tries the role's slots, starting from a random one so replicas do not
queue on the first; when every slot is taken it waits (10 ms, doubling up to 250 ms) and tries
again. Only a turn holds a cluster slot — reading the news, or finding there is none, does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from typing import Protocol

from core.model.roles.role import Role
from core.storage.slot_locks import PgTurnSlots

log = logging.getLogger("rolecall.host")

WAIT_FIRST = 0.01
WAIT_MOST = 0.25


def limit_of(role: Role) -> int:
    return role.max_concurrent_turns if role.concurrent_threads else 1


class TurnSlots(Protocol):
    def turn(self, role: Role) -> contextlib.AbstractAsyncContextManager[None]: ...


class SoleSlots:
    @contextlib.asynccontextmanager
    async def turn(self, role: Role) -> AsyncIterator[None]:
        yield


class ClusterSlots:
    def __init__(self, locks: PgTurnSlots) -> None:
        self._locks = locks

    @contextlib.asynccontextmanager
    async def turn(self, role: Role) -> AsyncIterator[None]:
        index, generation = await self._take(role)
        try:
            yield
        finally:
            try:
                await self._locks.give_back(role.name, index, generation)
            except Exception as error:  # gone with its connection anyway
                log.warning("a turn slot of role:%s was not given back: %s", role.name, error)

    async def _take(self, role: Role) -> tuple[int, int]:
        limit = limit_of(role)
        wait = WAIT_FIRST
        while True:
            first = random.randrange(limit)
            for step in range(limit):
                index = (first + step) % limit
                generation = await self._locks.try_take(role.name, index)
                if generation is not None:
                    return index, generation
            await asyncio.sleep(wait)
            wait = min(wait * 2, WAIT_MOST)
