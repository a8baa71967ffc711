"""Turn slots shared by every replica: PostgreSQL advisory locks on one connection of their own.

A role allows `max_concurrent_turns` turns at once (one, with `concurrent_threads: false`)
across the whole cluster, not per replica. Slot `i` of role `r` is the session-level advisory
lock (`slot namespace`, i) — `pg_try_advisory_lock(key(r), i)` — held by the replica whose turn
uses it, on this connection (`application_name` `rolecall-slots`):

- Taking a slot never waits on the server (`try`): the caller tries the role's slots and, when
  all are taken, waits a little and tries again.
- A replica that dies lets go of its slots at once: its connection closes, the server releases
  its locks. One that stalls keeps them until it wakes (its runs are taken over meanwhile, but
  wait for a slot).
- When this connection drops, every slot it held is gone with it (`generation` moves on); a
  give-back of a slot taken under an older generation does nothing. Turns running then finish
  without a slot, so for that while the limit may be passed by those turns — never otherwise.

No row is written: a slot costs two round trips on this connection per turn, and no WAL.
"""

from __future__ import annotations

import asyncio
import zlib

import asyncpg
from sqlalchemy.engine import make_url

from core.storage.engine import COMMAND_TIMEOUT, CONNECT_TIMEOUT
from core.storage.errors import StorageUnavailable
from core.storage.transact import outage

APPLICATION_NAME = "rolecall-slots"


def slot_key(role: str) -> int:
    """The advisory lock's first key for `role`'s slots (a signed 32-bit integer)."""
    value = zlib.crc32(f"rolecall turn slots\0{role}".encode())
    return value - (1 << 32) if value >= 1 << 31 else value


class PgTurnSlots:
    def __init__(self, url: str) -> None:
        self._dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._connection: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self.generation = 0
        """Moves on each time the connection is (re)opened: slots of older ones are gone."""

    async def try_take(self, role: str, index: int) -> int | None:
        """Take slot `index` of `role` if free: the generation it was taken under, or None."""
        async with self._lock:
            connection = await self._open()
            try:
                taken = await connection.fetchval(
                    "SELECT pg_try_advisory_lock($1, $2)", slot_key(role), index
                )
            except Exception as error:
                raise self._lost(error) from error
        return self.generation if taken else None

    async def give_back(self, role: str, index: int, generation: int) -> None:
        async with self._lock:
            if generation != self.generation or self._connection is None:
                return  # gone with the connection it was taken on
            try:
                await self._connection.fetchval(
                    "SELECT pg_advisory_unlock($1, $2)", slot_key(role), index
                )
            except Exception as error:
                raise self._lost(error) from error

    async def close(self) -> None:
        async with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None and not connection.is_closed():
                try:
                    await connection.close(timeout=1.0)
                except Exception:
                    connection.terminate()

    async def _open(self) -> asyncpg.Connection:
        if self._connection is not None and not self._connection.is_closed():
            return self._connection
        try:
            self._connection = await asyncpg.connect(
                self._dsn,
                timeout=CONNECT_TIMEOUT,
                command_timeout=COMMAND_TIMEOUT,
                server_settings={"application_name": APPLICATION_NAME},
            )
        except Exception as error:
            raise self._lost(error) from error
        self.generation += 1
        return self._connection

    def _lost(self, error: Exception) -> Exception:
        """The connection failed: drop it (its slots are gone) and say why."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.terminate()
        reason = outage(error)
        return StorageUnavailable(reason) if reason is not None else error
