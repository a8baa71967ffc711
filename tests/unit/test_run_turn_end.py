"""What becomes of the end of a turn (`core.model.runs.turn_end`): pure rules over values."""

from __future__ import annotations

import pytest

from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.runs.run import RunStatus
from core.model.runs.turn_end import (
    Posting,
    Standing,
    cursor_after_turn,
    is_superseded,
    posting,
    standing_after,
    turn_number,
)

ROLE = Address("role:concierge")


def test_a_turn_is_superseded_when_the_stored_cursors_moved() -> None:
    assert not is_superseded((3, 1), (3, 1))
    assert is_superseded((4, 1), (3, 1))
    assert is_superseded((3, 2), (3, 1))
    assert not is_superseded((5,), (5,)) and is_superseded((6,), (5,))


def test_an_active_role_posts_what_it_says() -> None:
    assert posting(ROLE, ParticipantState.ACTIVE, says=True, error=None) == Posting(
        speaks=True, error=None
    )
    assert posting(ROLE, ParticipantState.ACTIVE, says=True, error="slow").error == "slow"


@pytest.mark.parametrize("state", [ParticipantState.REMOVED, None])
def test_a_removed_role_posts_nothing_and_its_record_says_so(
    state: ParticipantState | None,
) -> None:
    said = posting(ROLE, state, says=True, error=None)
    assert said == Posting(speaks=False, error="role:concierge was removed; nothing was posted")
    after_error = posting(ROLE, state, says=True, error="timeout")
    assert after_error.error == "timeout; role:concierge was removed; nothing was posted"


def test_a_removed_role_that_says_nothing_keeps_its_error() -> None:
    assert posting(ROLE, ParticipantState.REMOVED, says=False, error=None) == Posting(
        speaks=False, error=None
    )


def test_a_caught_up_turn_puts_its_own_words_behind_the_cursor() -> None:
    assert cursor_after_turn(last_seq=10, cursor_to=10, posted=2) == 12
    assert cursor_after_turn(last_seq=10, cursor_to=10, posted=0) == 10


def test_a_turn_that_did_not_read_everything_stops_where_it_read() -> None:
    """What came in while it ran, and what it says after that, are news for the next turn."""
    assert cursor_after_turn(last_seq=12, cursor_to=10, posted=2) == 10


def test_a_failed_turn_fails_the_run_and_counts_the_failures_in_a_row() -> None:
    ready = Standing(status=RunStatus.READY, failures=0, last_error="old")
    once = standing_after(ready, failed=True, error="boom")
    assert once == Standing(status=RunStatus.FAILED, failures=1, last_error="boom")
    twice = standing_after(once, failed=True, error=None)
    assert twice == Standing(status=RunStatus.FAILED, failures=2, last_error=None)


def test_a_turn_that_did_not_fail_makes_the_run_ready_and_keeps_its_last_error() -> None:
    failed = Standing(status=RunStatus.FAILED, failures=3, last_error="boom")
    assert standing_after(failed, failed=False, error="ignored") == Standing(
        status=RunStatus.READY, failures=0, last_error="boom"
    )


def test_turns_are_numbered_one_after_the_other() -> None:
    assert turn_number(0) == 1 and turn_number(41) == 42
