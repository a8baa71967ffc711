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
- Turns of one replica share the connection, and a session's advisory locks are re-entrant (it
  is granted a lock it holds again): this replica's held slots are kept here as well, and a try
  for one of them is refused without asking the server.
- What the replica's turns ask for while a round trip is under way is sent together in the
  next, one statement carrying the takes and give-backs in the order asked: under load, a turn's
  take and give-back mostly ride on others' round trips. A turn cancelled while its take was
  under way gives the slot back if it was granted.

No row is written, and no WAL.
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass, field

import asyncpg
from sqlalchemy.engine import make_url

from core.storage.engine import COMMAND_TIMEOUT, CONNECT_TIMEOUT
from core.storage.errors import StorageUnavailable
from core.storage.transact import outage

APPLICATION_NAME = "rolecall-slots"

_ROUND_TRIP = (
    "SELECT CASE WHEN o.take THEN pg_try_advisory_lock(o.k, o.i)"
    " ELSE pg_advisory_unlock(o.k, o.i) END"
    " FROM unnest($1::bool[], $2::int[], $3::int[]) WITH ORDINALITY AS o(take, k, i, n)"
    " ORDER BY o.n"
)
"""The asks of one round trip, in order (a volatile target list is evaluated after the sort)."""


def slot_key(role: str) -> int:
    """The advisory lock's first key for `role`'s slots (a signed 32-bit integer)."""
    value = zlib.crc32(f"rolecall turn slots\0{role}".encode())
    return value - (1 << 32) if value >= 1 << 31 else value


@dataclass(slots=True)
class _Ask:
    take: bool
    slot: tuple[int, int]
    """(slot_key(role), index)."""
    generation: int
    """A give-back: the generation the slot was taken under."""
    answer: asyncio.Future[int | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class PgTurnSlots:
    def __init__(self, url: str) -> None:
        self._dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._connection: asyncpg.Connection | None = None
        self._asked: list[_Ask] = []
        """What waits for the next round trip."""
        self._flight: asyncio.Task[None] | None = None
        """Sends what was asked, one round trip after the other, until nothing waits."""
        self._held: set[tuple[int, int]] = set()
        """The slots this replica holds, under the current generation."""
        self.generation = 0
        """Moves on each time the connection is (re)opened: slots of older ones are gone."""

    async def try_take(self, role: str, index: int) -> int | None:
        """Take slot `index` of `role` if free: the generation it was taken under, or None."""
        return await self._ask(_Ask(True, (slot_key(role), index), 0))

    async def give_back(self, role: str, index: int, generation: int) -> None:
        await self._ask(_Ask(False, (slot_key(role), index), generation))

    def holds(self, role: str, index: int, generation: int) -> bool:
        """Whether slot `index` of `role`, taken under `generation`, is still this replica's
        on the server, as far as can be known without asking: taken on the connection that is
        still open. (A connection the server closed a moment ago may not be known to be closed
        yet — the same as for a slot a running turn holds.)"""
        connection = self._connection
        return (
            generation == self.generation
            and connection is not None
            and not connection.is_closed()
            and (slot_key(role), index) in self._held
        )

    def _ask(self, ask: _Ask) -> asyncio.Future[int | None]:
        self._asked.append(ask)
        if self._flight is None or self._flight.done():
            self._flight = asyncio.create_task(self._fly(), name="rolecall-slots")
        return ask.answer

    async def _fly(self) -> None:
        while self._asked:
            asked, self._asked = self._asked, []
            try:
                await self._round_trip(asked)
            except BaseException as error:
                for ask in asked:
                    if not ask.answer.done():
                        ask.answer.set_exception(error)
                if not isinstance(error, Exception):
                    raise

    async def _round_trip(self, asked: list[_Ask]) -> None:
        try:
            connection = await self._open()
        except Exception as error:
            for ask in asked:
                _answer(ask, error if ask.take else None)  # a give-back: gone with it
            return
        held = self._held
        sent: list[_Ask] = []
        for ask in asked:
            if ask.take and ask.slot in held:
                _answer(ask, None)  # this replica's already: refused here
            elif not ask.take and (ask.generation != self.generation or ask.slot not in held):
                _answer(ask, None)  # gone with the connection it was taken on
            else:
                sent.append(ask)
                # Counted from now: a later take of it in this round trip is refused, a later
                # give-back is sent after the take.
                if ask.take:
                    held.add(ask.slot)
                else:
                    held.discard(ask.slot)
        if not sent:
            return
        try:
            rows = await connection.fetch(
                _ROUND_TRIP,
                [a.take for a in sent],
                [a.slot[0] for a in sent],
                [a.slot[1] for a in sent],
            )
        except Exception as error:
            lost = self._lost(error)
            for ask in sent:
                _answer(ask, lost)
            return
        generation = self.generation
        for ask, (granted,) in zip(sent, rows, strict=True):
            if not ask.take:
                _answer(ask, None)
            elif not granted:
                held.discard(ask.slot)
                _answer(ask, None)
            elif not _answer(ask, generation):  # its turn is gone: give the slot back
                self._asked.append(_Ask(False, ask.slot, generation))

    async def close(self) -> None:
        if self._flight is not None:
            await asyncio.wait([self._flight])
        connection, self._connection = self._connection, None
        self._held.clear()
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
        self._held.clear()
        self.generation += 1
        return self._connection

    def _lost(self, error: Exception) -> Exception:
        """The connection failed: drop it (its slots are gone) and say why."""
        connection, self._connection = self._connection, None
        self._held.clear()
        if connection is not None:
            connection.terminate()
        reason = outage(error)
        return StorageUnavailable(reason) if reason is not None else error


def _answer(ask: _Ask, outcome: int | Exception | None) -> bool:
    """Tell the asker (False: it stopped waiting)."""
    if ask.answer.done():
        return False
    if isinstance(outcome, Exception):
        ask.answer.set_exception(outcome)
    else:
        ask.answer.set_result(outcome)
    return True
