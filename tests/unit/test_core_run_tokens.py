"""Who a conversation run may act for, worked out now: removed and deactivated people."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime

import pytest

from core.model.errors import NotAllowed
from core.model.membership import ParticipantState
from core.model.participants import Address, parse_address
from core.model.runs.run import Run, RunId, RunKind, RunStatus, Session, SessionId
from core.model.runs.tokens import check_may_act
from core.model.timeline import ThreadId

AT = datetime(2026, 12, 1, tzinfo=UTC)
ANN, BO, ROLE = (parse_address(a) for a in ("person:ann", "person:bo", "role:echo"))
ACTIVE, REMOVED = ParticipantState.ACTIVE, ParticipantState.REMOVED
RUN = Run(
    id=RunId("r"), kind=RunKind.CONVERSATION, role="echo", thread_id=ThreadId("t"), task_id=None,
    cursor=0, task_cursor=0, status=RunStatus.READY, failures=0, last_error=None,
    session=Session(id=SessionId("s"), number=1, opened_at=AT, state=None), turns=0,
    created_at=AT, updated_at=AT,
)  # fmt: skip


def _refused(
    states: Mapping[Address, ParticipantState], deactivated: Collection[Address] = ()
) -> str:
    with pytest.raises(NotAllowed) as caught:
        check_may_act(RUN, states, role_configured=True, deactivated=deactivated)
    return caught.value.code


def test_a_run_acts_while_some_person_is_active_and_not_deactivated() -> None:
    check_may_act(RUN, {ANN: ACTIVE, ROLE: ACTIVE}, role_configured=True)
    check_may_act(RUN, {ANN: ACTIVE, BO: ACTIVE, ROLE: ACTIVE}, role_configured=True,
                  deactivated={ANN})  # fmt: skip
    check_may_act(RUN, {ANN: ACTIVE, BO: REMOVED, ROLE: ACTIVE}, role_configured=True,
                  deactivated={BO})  # fmt: skip


def test_deactivated_or_removed_people_cut_the_run_off() -> None:
    assert _refused({ANN: ACTIVE, ROLE: ACTIVE}, {ANN}) == "person_deactivated"
    assert _refused({ANN: ACTIVE, BO: REMOVED, ROLE: ACTIVE}, {ANN}) == "person_deactivated"
    assert _refused({ANN: REMOVED, ROLE: ACTIVE}, {ANN}) == "person_deactivated"
    assert _refused({ANN: REMOVED, BO: REMOVED, ROLE: ACTIVE}) == "person_removed"


def test_the_roles_own_state_is_checked_first() -> None:
    assert _refused({ANN: ACTIVE, ROLE: REMOVED}, {ANN}) == "role_removed"
