"""Leases: which replica holds a thing (a run, an endpoint's delivery) and until when.

Several `rolecall serve` processes (replicas) share one PostgreSQL database; a thing that must
be worked by one of them at a time is held under a lease:

    free ──claim──▶ held(holder, fence, until) ──renew──▶ held(same fence, later until)
      ▲                   │            │
      └────release────────┘            └──(until passes)──▶ expired ──claim──▶ held(fence + 1)

Rules:

- **A claim always takes a new fence.** Fences only grow (a released lease keeps its row and its
  fence), so a holder that lost its lease — it stalled past `until` and another replica claimed
  — cannot pass for the new holder: every write it makes as the holder names its fence, and a
  write whose fence is not the lease's is refused (`LeaseLost`). Even the same holder claiming
  again gets a new fence: a late release of its old claim cannot free the new one.
- **Claimable** when free, expired, or already held by the claimer.
- **Renewal** moves `until` of every lease a holder holds (its heartbeat); an expired lease
  that nobody claimed meanwhile is renewed too — nobody else worked it, so nothing was lost.
- **Release** frees a lease only under its fence. Released with `handed_back`, the thing is left
  for another replica to pick up at once (a replica stopping cleanly); otherwise it is simply
  free (a run put to sleep with nothing pending).
- **Orphaned**: expired while held (its holder died or stalled) or handed back — what a sweep
  on every replica offers to take over.

Times are integer microseconds, passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.model.errors import Conflict

FREE = ""
"""The holder of a lease nobody holds."""


class LeaseKind(StrEnum):
    RUN = "run"
    ENDPOINT = "endpoint"
    SLACK = "slack"
    HOUSEKEEPING = "housekeeping"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fence:
    """What a holder names when it writes as the holder: who, and which claim."""

    holder: str
    number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    holder: str
    fence: int
    expires_at: int
    """When the lease ends unless renewed; for a free lease, 0 (released) or the moment it was
    handed back (greater than 0)."""

    @property
    def held(self) -> bool:
        return self.holder != FREE

    def claimable_by(self, holder: str, *, now: int) -> bool:
        return not self.held or self.holder == holder or self.expires_at < now

    def orphaned(self, *, now: int) -> bool:
        """Expired while held, or handed back: another replica should take it over."""
        return (self.held and self.expires_at < now) or (not self.held and self.expires_at > 0)

    def fenced_by(self, fence: Fence) -> bool:
        return self.holder == fence.holder and self.fence == fence.number


class LeaseLost(Conflict):
    """A write named a fence that is no longer the lease's: another replica holds it now."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what}: this replica no longer holds it; the write was refused", code="lease_lost"
        )
