"""A thread as readers see it: its participant set, each participant's current state, its policy.

A thread comes into being only by resolving its participant set and never closes. Current
membership and current states are always visible to anyone who may see the thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address
from core.model.timeline import ThreadId


@dataclass(frozen=True, slots=True, kw_only=True)
class Thread:
    id: ThreadId
    participants: tuple[tuple[Address, ParticipantState], ...]
    memory_policy: MemoryPolicy
    created_at: datetime

    @property
    def states(self) -> dict[Address, ParticipantState]:
        return dict(self.participants)

    @property
    def addresses(self) -> tuple[Address, ...]:
        return tuple(address for address, _ in self.participants)
