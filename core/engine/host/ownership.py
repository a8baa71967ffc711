"""Who runs a run: on one process, this host; with replicas, the one holding the run's lease.

With several replicas on one PostgreSQL database every replica hears of every commit, so every
replica's host is nudged for every run. Only the holder of the run's lease (`core.model.leases`)
reads and takes its turns:

- **Claim before the first read.** A nudged run this host does not hold is claimed: a quick read
  of the lease first (held by another, unexpired: leave it — that replica was nudged too), then
  the claim itself, which a racing replica may win. The run is read again after every claim:
  what another owner committed before is what counts. A run found held elsewhere is not asked
  about again while its holder beats (its heartbeat renews the lease), for a minute at most
  (`KNOWN_HELD`): nudges meanwhile are left to the holder. Once the holder's heartbeat is seen
  to have stopped (`RunHost.holders_alive`), or the minute is over, one look is taken if any
  came (the holder may have let the run go and died since).
- **Fenced writes.** The end of a turn and a cursor's move name the claim's fence; the writer
  refuses them once the lease was lost (`LeaseLost`): a host that stalled past its lease and
  woke cannot commit a reply, move the cursor, or so post to a channel.
- **Held while awake.** The replica's heartbeat renews all its leases at once; a run put to
  sleep releases its lease; a replica stopping cleanly hands back all of them (its runs are
  taken over at once); one that dies lets them expire — and every replica's sweep
  (`RunHost.take_over`) nudges the runs whose lease expired or was handed back.

`SoleOwner` is the one-process case (SQLite): this host runs every run, nothing is claimed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from core.model.leases import Fence, LeaseKind
from core.model.runs.run import RunId
from core.model.timeline import ThreadId
from core.storage.leases_store import SqlLeases


@dataclass(frozen=True, slots=True)
class Owned:
    """This host may run the run; its writes as the owner name `fence` (None: unfenced, the
    only process)."""

    fence: Fence | None


@dataclass(frozen=True, slots=True)
class HeldElsewhere:
    """Another replica holds the run, until `until` (µs; 0: unknown) unless it renews; it was
    nudged too, so this host need not ask again before then — nor after, while `holder` (None:
    not known) beats: its heartbeat renews the lease."""

    until: int
    holder: str | None = None


class Ownership(Protocol):
    @property
    def replica(self) -> str | None:
        """This replica's id (None: one process, no replicas)."""

    async def claim(
        self, run_id: RunId, *, thread_id: ThreadId | None, now: int
    ) -> Owned | HeldElsewhere:
        """Owned, or held by another replica (`thread_id`: a conversation run's thread)."""

    async def release(self, run_id: RunId, fence: Fence) -> None: ...


class SoleOwner:
    """One process serves the database: it owns every run."""

    @property
    def replica(self) -> str | None:
        return None

    async def claim(
        self, run_id: RunId, *, thread_id: ThreadId | None, now: int
    ) -> Owned | HeldElsewhere:
        return Owned(None)

    async def release(self, run_id: RunId, fence: Fence) -> None:
        pass


class LeasedRuns:
    """Runs owned under leases in the database, by replica `replica`, for `ttl` microseconds
    at a time (renewed by the replica's heartbeat)."""

    def __init__(self, leases: SqlLeases, replica: str, *, ttl: int) -> None:
        self._leases = leases
        self._replica = replica
        self._ttl = ttl

    @property
    def replica(self) -> str | None:
        return self._replica

    async def claim(
        self, run_id: RunId, *, thread_id: ThreadId | None, now: int
    ) -> Owned | HeldElsewhere:
        lease = await self._leases.get(LeaseKind.RUN, run_id)
        if lease is not None and not lease.claimable_by(self._replica, now=now):
            return HeldElsewhere(lease.expires_at, lease.holder)  # it was nudged too
        fence = await self._leases.claim(
            LeaseKind.RUN, run_id, self._replica, self._ttl, thread_id=thread_id
        )
        return Owned(fence) if fence is not None else HeldElsewhere(0)

    async def release(self, run_id: RunId, fence: Fence) -> None:
        await self._leases.release(LeaseKind.RUN, run_id, fence)
