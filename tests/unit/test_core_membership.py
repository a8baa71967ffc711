"""The per-(thread, participant) state machine (core/model/membership.py)."""

from __future__ import annotations

import pytest

from core.model.errors import Conflict, InvalidInput
from core.model.membership import (
    INITIAL_STATE,
    TRANSITIONS,
    IllegalStateChange,
    NeverAMember,
    ParticipantState,
    change_state,
    parse_state,
)
from core.model.participants import Address, parse_address

ALICE = parse_address("person:alice")
BOB = parse_address("person:bob")
SUPPORT = parse_address("role:support")
ACTIVE = ParticipantState.ACTIVE
REMOVED = ParticipantState.REMOVED


def _states(*, removed: tuple[Address, ...] = ()) -> dict[Address, ParticipantState]:
    """The states of the thread {alice, support}; Bob was never a member."""
    return {member: REMOVED if member in removed else ACTIVE for member in (ALICE, SUPPORT)}


def test_creation_makes_everyone_active() -> None:
    assert INITIAL_STATE is ACTIVE


def test_the_only_moves_are_active_to_removed_and_back() -> None:
    expected = {ACTIVE: frozenset({REMOVED}), REMOVED: frozenset({ACTIVE})}
    assert expected == TRANSITIONS


def test_removing_an_active_member_is_legal_and_reports_where_it_came_from() -> None:
    states = _states()
    assert change_state(states, ALICE, REMOVED) is ACTIVE


def test_re_adding_a_removed_member_is_legal_and_reports_where_it_came_from() -> None:
    states = _states(removed=(ALICE,))
    assert change_state(states, ALICE, ACTIVE) is REMOVED


def test_change_state_only_checks_and_does_not_mutate_the_states() -> None:
    states = _states()
    before = dict(states)
    change_state(states, ALICE, REMOVED)
    assert states == before


def test_removing_someone_already_removed_is_an_illegal_state_change_conflict() -> None:
    with pytest.raises(IllegalStateChange) as info:
        change_state(_states(removed=(ALICE,)), ALICE, REMOVED)
    assert isinstance(info.value, Conflict)
    assert info.value.code == "illegal_state_change"
    assert "removed" in info.value.message


def test_re_adding_someone_active_is_an_illegal_state_change_conflict() -> None:
    with pytest.raises(IllegalStateChange) as info:
        change_state(_states(), SUPPORT, ACTIVE)
    assert isinstance(info.value, Conflict)
    assert info.value.code == "illegal_state_change"
    assert "active" in info.value.message


@pytest.mark.parametrize("to", [ACTIVE, REMOVED])
def test_a_never_member_cannot_be_added_or_removed(to: ParticipantState) -> None:
    with pytest.raises(NeverAMember) as info:
        change_state(_states(), BOB, to)
    assert isinstance(info.value, Conflict)
    assert info.value.code == "never_a_member"


def test_never_member_message_hints_that_a_new_set_is_a_new_thread() -> None:
    with pytest.raises(NeverAMember) as info:
        change_state(_states(), BOB, ACTIVE)
    message = info.value.message
    assert "person:bob" in message
    assert "never a member" in message
    assert "participant set" in message
    assert "resolve the new set" in message


@pytest.mark.parametrize(
    ("raw", "state"),
    [("active", ACTIVE), ("removed", REMOVED), (ACTIVE, ACTIVE), (REMOVED, REMOVED)],
)
def test_parse_state_accepts_the_two_states(raw: object, state: ParticipantState) -> None:
    assert parse_state(raw) is state


@pytest.mark.parametrize(
    "raw", ["", "Active", "REMOVED", " active", "deleted", "left", None, 1, True, ["active"]]
)
def test_parse_state_rejects_anything_else_with_invalid_state(raw: object) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_state(raw)
    assert info.value.code == "invalid_state"
    assert "'active' or 'removed'" in info.value.message
