"""The roster: which roles a gateway accepts in conversations and as task assignees.

A role nobody serves would make a conversation that never answers and a task nobody works on, so
an address or an assignee naming a role is refused (`unknown_role`, naming the roles served)
unless this gateway serves it — or its operator said that roles served by another deployment on
the same database are expected (`others`, the setting `ROLECALL_ALLOW_UNSERVED_ROLES`). The rule
is the same on the operator API, the CLI, every channel and the agents' tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.model.errors import InvalidInput
from core.model.participants import ParticipantKind, ParticipantSet, kind_of
from core.model.tasks import parse_assignee


@dataclass(frozen=True, slots=True)
class Roster:
    served: frozenset[str]
    others: bool = False
    """Accept roles this gateway does not serve (another deployment serves them)."""

    @classmethod
    def of(cls, served: Iterable[str], *, others: bool = False) -> Roster:
        return cls(frozenset(served), others)

    def check(self, name: str) -> str:
        """`name` (a role's name) when it may be used here; `unknown_role` otherwise."""
        if self.others or name in self.served:
            return name
        listed = ", ".join(sorted(self.served)) or "none"
        raise InvalidInput(
            f"no role named {name!r} is served here (roles served: {listed}; "
            "set ROLECALL_ALLOW_UNSERVED_ROLES=true for roles another deployment serves)",
            code="unknown_role",
        )

    def assignee(self, raw: object) -> str | None:
        """A task's assignee as given (a role's name or address; None or "" for nobody): the
        role's name when it may be assigned here, `unknown_role` otherwise."""
        name = parse_assignee(raw)
        return self.check(name) if name is not None else None

    def check_participants(self, participants: ParticipantSet) -> ParticipantSet:
        """The set, when every role in it may be used here."""
        for address in participants:
            if kind_of(address) is ParticipantKind.ROLE:
                self.check(address.removeprefix("role:"))
        return participants
