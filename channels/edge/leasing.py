"""Work that one replica at a time does, under a lease (`core.model.leases`): an endpoint's
deliveries, a Slack app's, housekeeping.

A worker asks `hold(kind, subject)` before it works, and again before each step that the
outside world sees (a request sent, a post made):

- **Held**: the lease is this replica's, under the fence it knows (read from the database: one
  row) — or it was claimable and the claim just won, under a new fence. The worker's writes as
  the holder name `Held.fence`; a fence that differs from the one it worked under means another
  replica may have worked meanwhile: the worker reads its position again before going on.
- **Not held** (None): another replica holds it. The worker does not work; it asks again every
  `retry_every` seconds (not on every nudge: every replica is nudged by every commit). So when
  the holder stops cleanly (it hands its leases back) another takes over within `retry_every`;
  when it dies, within the lease's time plus `retry_every`.
- **Lost**: a write under the fence was refused (`LeaseLost`: the lease expired and another
  replica claimed it). The worker stops working and calls `lost`; the next `hold` tells.

The holder never renews: the replica's heartbeat renews every lease it holds, and a clean stop
hands them all back (`gateway.replica`). A worker releases a lease only when its subject is done
for good (an endpoint deleted).

One process (SQLite, `holder` None) holds everything, always, with no claim and no fence
(`Held.fence` None: writes are not fenced). Each subject has one worker per process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from core.model.leases import Fence, Lease, LeaseKind
from core.storage.leases_store import SqlLeases

_MICROS = 1_000_000


def now_micros() -> int:
    """The wall clock in microseconds, as lease expiries and heartbeats are kept."""
    return int(time.time() * _MICROS)


@dataclass(frozen=True, slots=True)
class Held:
    """This replica may do the work; its writes as the holder name `fence` (None: unfenced,
    the only process)."""

    fence: Fence | None


SOLE = Held(None)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseTerms:
    """How this process holds leases, known before the database opens: `holder` its replica id
    (None: the only process, on SQLite), `ttl` microseconds a lease lasts unless renewed, and
    how often a replica that does not hold a lease asks again."""

    holder: str | None
    ttl: int
    retry_every: float

    def leasing(self, leases: SqlLeases) -> Leasing:
        return Leasing(leases, self.holder, ttl=self.ttl, retry_every=self.retry_every)


ONE_PROCESS = LeaseTerms(holder=None, ttl=0, retry_every=1.0)


def _still(lease: Lease | None, fence: Fence, *, now: int) -> bool:
    """The lease is still the claim `fence` names, and has not expired."""
    return lease is not None and lease.fenced_by(fence) and lease.expires_at >= now


class Leasing:
    """The leases this process holds for its workers, with the fence of each."""

    def __init__(
        self,
        leases: SqlLeases | None,
        holder: str | None,
        *,
        ttl: int,
        retry_every: float,
        clock: Callable[[], int] = now_micros,
    ) -> None:
        self._leases = leases
        self._holder = holder
        self._ttl = ttl
        self.retry_every = retry_every
        self._clock = clock
        self._known: dict[tuple[LeaseKind, str], Fence] = {}

    @classmethod
    def sole(cls) -> Leasing:
        """The only process: everything held, nothing claimed."""
        return cls(None, None, ttl=0, retry_every=ONE_PROCESS.retry_every)

    @property
    def shared(self) -> bool:
        """Other replicas may hold what this one does not."""
        return self._holder is not None

    async def hold(self, kind: LeaseKind, subject: str) -> Held | None:
        """Held (the fence known, still the lease's; or claimed now), or None: another replica
        holds it."""
        if self._holder is None or self._leases is None:
            return SOLE
        key = (kind, subject)
        now = self._clock()
        lease = await self._leases.get(kind, subject)
        known = self._known.pop(key, None)
        if known is not None and _still(lease, known, now=now):
            self._known[key] = known
            return Held(known)
        if lease is not None and not lease.claimable_by(self._holder, now=now):
            return None  # its holder works it
        fence = await self._leases.claim(kind, subject, self._holder, self._ttl)
        if fence is None:  # another replica's claim came first
            return None
        self._known[key] = fence
        return Held(fence)

    def known(self, kind: LeaseKind, subject: str) -> Held | None:
        """What this process last knew, without asking the database: Held while it has a fence
        that no write has found lost."""
        if self._holder is None:
            return SOLE
        fence = self._known.get((kind, subject))
        return Held(fence) if fence is not None else None

    def lost(self, kind: LeaseKind, subject: str) -> None:
        """A write under the fence was refused: forget it."""
        self._known.pop((kind, subject), None)

    async def release(self, kind: LeaseKind, subject: str) -> None:
        """The subject is done for good (an endpoint deleted): free its lease, if held."""
        fence = self._known.pop((kind, subject), None)
        if fence is not None and self._leases is not None:
            await self._leases.release(kind, subject, fence)
