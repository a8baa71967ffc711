"""The pure rules of approvals (options, approvers, expiry, who may answer and when) and the
turn's timeout held while a run waits for a person."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from core.engine.host.live import LiveRun, hold_turn
from core.model.approvals import (
    YES_NO,
    ApprovalClosed,
    ApprovalOption,
    OptionKind,
    Outcome,
    Resolution,
    check_answer,
    check_approvers,
    check_expire,
    check_expiry,
    check_options,
)
from core.model.errors import Conflict, InvalidInput, NotAllowed
from core.model.membership import ParticipantState
from core.model.participants import Address

NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
ANN, BOB = Address("person:ann"), Address("person:bob")
STATES = {ANN: ParticipantState.ACTIVE, BOB: ParticipantState.REMOVED}


def test_options_from_labels_get_ids_and_objects_keep_theirs() -> None:
    assert check_options(None) == YES_NO
    made = check_options(["Allow once", "Allow once!", {"id": "no", "label": "Reject",
                                                          "kind": "reject_once"}])  # fmt: skip
    assert [(o.id, o.kind) for o in made] == [
        ("allow-once", OptionKind.CHOICE),
        ("allow-once-2", OptionKind.CHOICE),
        ("no", OptionKind.REJECT_ONCE),
    ]
    bad_options: list[object] = [
        [],
        "Yes",
        [1],
        [{"label": "x", "colour": "red"}],
        [{"id": "A B", "label": "x"}],
        [{"label": "x", "kind": "maybe"}],
        ["x"] * 2,
        [str(i) for i in range(7)],
    ]
    for bad in bad_options:
        with pytest.raises(InvalidInput):
            check_options(bad)


def test_approvers_are_people_and_expiry_is_bounded() -> None:
    assert check_approvers(["person:ann", "person:ann", "person:bob"]) == (ANN, BOB)
    with pytest.raises(InvalidInput):
        check_approvers(["role:ops"])
    assert check_expiry(None, now=NOW) == NOW + timedelta(minutes=10)
    assert check_expiry(30, now=NOW) == NOW + timedelta(seconds=30)
    for bad in (0, -1, True, "60", 8 * 86_400):
        with pytest.raises(InvalidInput):
            check_expiry(bad, now=NOW)


def _answer(**given: object) -> ApprovalOption:
    fields: dict[str, object] = {
        "options": YES_NO,
        "approvers": (),
        "states": STATES,
        "resolved": None,
        "expires_at": NOW + timedelta(minutes=1),
        "answerer": ANN,
        "option_id": "yes",
        "now": NOW,
    }
    return check_answer(**{**fields, **given})  # type: ignore[arg-type]


def test_who_may_answer_and_when() -> None:
    assert _answer() == YES_NO[0]
    with pytest.raises(NotAllowed, match="removed"):
        _answer(answerer=BOB)
    with pytest.raises(NotAllowed, match="not a member"):
        _answer(answerer=Address("person:cy"))
    with pytest.raises(NotAllowed, match="approvers are person:bob"):
        _answer(approvers=(BOB,))
    with pytest.raises(InvalidInput, match="the options are yes, no"):
        _answer(option_id="maybe")
    with pytest.raises(ApprovalClosed, match="expired"):
        _answer(now=NOW + timedelta(minutes=1))
    answered = Resolution(outcome=Outcome.ANSWERED, option=YES_NO[1], by=BOB, channel="slack")
    with pytest.raises(ApprovalClosed, match="answered 'No' by person:bob \\(slack\\)"):
        _answer(resolved=answered)


def test_an_approval_expires_once_and_not_early() -> None:
    with pytest.raises(Conflict):
        check_expire(resolved=None, expires_at=NOW, now=NOW - timedelta(seconds=1))
    check_expire(resolved=None, expires_at=NOW, now=NOW)
    with pytest.raises(ApprovalClosed):
        check_expire(resolved=Resolution(outcome=Outcome.EXPIRED), expires_at=NOW, now=NOW)
    assert not Resolution(outcome=Outcome.EXPIRED).allows
    rejected = ApprovalOption(id="r", label="Reject", kind=OptionKind.REJECT_ONCE)
    assert not Resolution(outcome=Outcome.ANSWERED, option=rejected, by=ANN).allows


async def test_waiting_for_a_person_does_not_count_against_the_turns_timeout() -> None:
    """A turn with 0.2 s left waits 0.5 s for a person and is not timed out; afterwards it has
    about what it had left."""
    live = LiveRun(thread_id=None, role="ops")
    async with asyncio.timeout(0.2) as live.deadline:
        loop = asyncio.get_running_loop()
        async with hold_turn(live, 10.0):
            await asyncio.sleep(0.5)
        left = live.deadline.when() - loop.time()  # type: ignore[operator]
        assert 0.05 < left <= 0.2
    # Without a running attempt, holding is nothing.
    async with hold_turn(LiveRun(thread_id=None, role="ops"), 1.0):
        pass
