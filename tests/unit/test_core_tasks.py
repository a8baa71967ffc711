"""The task rules as pure functions: status moves, what an update changes, input checks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.model.errors import Conflict, InvalidInput, TooLarge
from core.model.tasks import (
    MOVES,
    Task,
    TaskChange,
    TaskId,
    TaskStatus,
    check_move,
    check_title,
    diff,
    parse_assignee,
    parse_external,
)

AT = datetime(2026, 11, 30, tzinfo=UTC)


def _task(status: TaskStatus = TaskStatus.OPEN, assignee: str | None = "echo") -> Task:
    return Task(id=TaskId("t"), title="T", body="B", status=status, assignee=assignee,
                external=None, created_at=AT, updated_at=AT, events=1)  # fmt: skip


@pytest.mark.parametrize("current", list(TaskStatus))
@pytest.mark.parametrize("wanted", list(TaskStatus))
def test_every_move_is_allowed_exactly_when_the_table_says_so(
    current: TaskStatus, wanted: TaskStatus
) -> None:
    if wanted in MOVES[current]:
        check_move(current, wanted)
    else:
        with pytest.raises(Conflict):
            check_move(current, wanted)


def test_an_update_records_only_what_it_changes() -> None:
    change = TaskChange(title="T", body="new", status=TaskStatus.DONE, assignee="")
    assert diff(_task(), change) == {
        "body": {"from": "B", "to": "new"},
        "status": {"from": "open", "to": "done"},
        "assignee": {"from": "echo", "to": None},
    }
    assert diff(_task(), TaskChange()) == {}


def test_inputs_are_checked() -> None:
    assert check_title("  Book a room ") == "Book a room"
    with pytest.raises(TooLarge):
        check_title("x" * 201)
    assert parse_assignee("role:echo") == parse_assignee("echo") == "echo"
    assert parse_assignee(None) is None
    with pytest.raises(InvalidInput):
        parse_assignee("person:ann")
    with pytest.raises(InvalidInput):
        parse_external({"source": "github"})
