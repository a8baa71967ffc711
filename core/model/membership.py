"""The per-(thread, participant) state machine.

Membership is permanent: the participants of a thread are fixed by its participant set. What
changes is each participant's state:

    active  --remove-->  removed
    removed --re-add-->  active

Creation makes every participant `active`. Every move is recorded on the timeline as a
`participant_state_changed` event. Any other move — removing someone already removed, re-adding
someone active — is an `IllegalStateChange`. A participant who was never a member cannot be added:
that would be a different participant set, hence a different thread (`NeverAMember`).
"""

from __future__ import annotations

from enum import StrEnum

from core.model.errors import Conflict, InvalidInput
from core.model.participants import Address


class ParticipantState(StrEnum):
    ACTIVE = "active"
    REMOVED = "removed"


INITIAL_STATE = ParticipantState.ACTIVE

# The legal moves, as data: from-state -> the states it may move to.
TRANSITIONS: dict[ParticipantState, frozenset[ParticipantState]] = {
    ParticipantState.ACTIVE: frozenset({ParticipantState.REMOVED}),
    ParticipantState.REMOVED: frozenset({ParticipantState.ACTIVE}),
}


class IllegalStateChange(Conflict):
    code = "illegal_state_change"


class NeverAMember(Conflict):
    code = "never_a_member"


def parse_state(raw: object) -> ParticipantState:
    try:
        return ParticipantState(str(raw))
    except ValueError:
        raise InvalidInput(
            f"state must be 'active' or 'removed', not {raw!r}", code="invalid_state"
        ) from None


def change_state(
    states: dict[Address, ParticipantState], participant: Address, to: ParticipantState
) -> ParticipantState:
    """Check the move of `participant` to `to`; return the state it moves from."""
    current = states.get(participant)
    if current is None:
        raise NeverAMember(
            f"{participant} was never a member of this thread and cannot be added: a thread "
            "is its participant set, so resolve the new set to reach (or create) its thread",
        )
    if to not in TRANSITIONS[current]:
        raise IllegalStateChange(f"{participant} is already {current.value}; cannot move to {to}")
    return current
