"""The thread as readers see it (core/model/threads.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from core.model.membership import ParticipantState
from core.model.memory_policy import MemoryPolicy
from core.model.participants import ParticipantSet, parse_address
from core.model.threads import Thread
from core.model.timeline import ThreadId

ALICE = parse_address("person:alice")
SUPPORT = parse_address("role:support")


def _thread() -> Thread:
    return Thread(
        id=ThreadId("t-1"),
        participants=((ALICE, ParticipantState.REMOVED), (SUPPORT, ParticipantState.ACTIVE)),
        memory_policy=MemoryPolicy(),
        created_at=datetime(2026, 11, 30, tzinfo=UTC),
    )


def test_states_map_each_participant_to_its_current_state() -> None:
    assert _thread().states == {ALICE: ParticipantState.REMOVED, SUPPORT: ParticipantState.ACTIVE}


def test_addresses_keep_the_participant_order() -> None:
    thread = _thread()
    assert thread.addresses == (ALICE, SUPPORT)
    assert thread.addresses == ParticipantSet.of([SUPPORT, ALICE]).members


def test_states_is_a_fresh_copy_each_time() -> None:
    thread = _thread()
    states = thread.states
    states[ALICE] = ParticipantState.ACTIVE
    assert thread.states[ALICE] is ParticipantState.REMOVED
