"""What an inbound delivery says (the mapping of GitHub's events and of the generic shape) and
what it does to a task as it is (the plan), as pure functions; and the source manifest model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from core.model.errors import InvalidInput, RolecallError, TooLarge
from core.model.tasks import (
    MAX_TITLE,
    ExternalRef,
    Task,
    TaskChange,
    TaskId,
    TaskStatus,
    parse_external_key,
)
from core.model.webhooks import (
    Comment,
    Ignored,
    ItemUpdate,
    NewItem,
    Source,
    SourceKind,
    map_delivery,
    map_generic,
    map_github,
    plan,
    status_path,
)

GH = Source(
    name="gh", kind=SourceKind.GITHUB, secret="GH_SECRET", assignees={"rolecall-bot": "ops"}
)
TRACKER = Source(name="tracker", kind=SourceKind.STANDARD, secret="TRACKER_SECRET")
AT = datetime(2026, 11, 30, tzinfo=UTC)


def issue_event(action: str, **issue: Any) -> dict[str, Any]:
    fields = {
        "number": 123,
        "title": "Door sticks",
        "body": "It squeaks too.",
        "html_url": "https://github.com/acme/app/issues/123",
        "state": "open",
        "state_reason": None,
    } | issue
    return {"action": action, "issue": fields, "repository": {"full_name": "acme/app"}}


def task(status: TaskStatus = TaskStatus.OPEN, **fields: Any) -> Task:
    values = {"title": "Door sticks", "body": "It squeaks too.", "assignee": None} | fields
    return Task(id=TaskId("t1"), status=status, external=None, created_at=AT, updated_at=AT,
                events=1, **values)  # fmt: skip


# --- GitHub ------------------------------------------------------------------------------------


def test_an_opened_issue_is_the_item_github_owner_repo_number_whichever_source_got_it() -> None:
    update = map_github(GH, "issues", issue_event("opened"))
    assert isinstance(update, ItemUpdate)
    assert update.ref == ExternalRef(
        source="github", key="acme/app#123", url="https://github.com/acme/app/issues/123"
    )
    assert update.new == NewItem(title="Door sticks", body="It squeaks too.")
    assert plan(None, update).create == update.new


@pytest.mark.parametrize(
    ("reason", "status"), [("completed", TaskStatus.DONE), ("not_planned", TaskStatus.CANCELLED)]
)
def test_closed_is_done_or_cancelled_when_not_planned(reason: str, status: TaskStatus) -> None:
    event = issue_event("closed", state="closed", state_reason=reason)
    update = map_github(GH, "issues", event)
    assert isinstance(update, ItemUpdate) and update.change == TaskChange(status=status)
    assert plan(task(), update).changes == (TaskChange(status=status),)


def test_reopened_opens_and_edited_changes_title_and_body() -> None:
    reopened = map_github(GH, "issues", issue_event("reopened"))
    assert isinstance(reopened, ItemUpdate)
    assert plan(task(TaskStatus.DONE), reopened).changes == (TaskChange(status=TaskStatus.OPEN),)
    edited = map_github(GH, "issues", issue_event("edited", title="Door sticks badly", body=None))
    assert isinstance(edited, ItemUpdate)
    assert plan(task(), edited).changes == (TaskChange(title="Door sticks badly", body=""),)


def test_a_comment_quotes_its_author_and_creates_an_unknown_issue_first() -> None:
    event = issue_event("created", state="closed") | {
        "comment": {"body": "Fixed in #124", "user": {"login": "octocat"}}
    }
    update = map_github(GH, "issue_comment", event)
    assert isinstance(update, ItemUpdate)
    assert update.comment == Comment(author="octocat", text="Fixed in #124")
    steps = plan(None, update)
    assert steps.create == NewItem(title="Door sticks", body="It squeaks too.",
                                   status=TaskStatus.DONE)  # fmt: skip
    assert steps.changes == (TaskChange(status=TaskStatus.DONE),)  # the issue is closed
    assert steps.comment == "octocat: Fixed in #124"


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_comment_edits_and_deletions_are_ignored(action: str) -> None:
    ignored = map_github(GH, "issue_comment", issue_event(action))
    assert isinstance(ignored, Ignored) and action in ignored.reason


@pytest.mark.parametrize("event", ["ping", "push", "pull_request"])
def test_other_events_are_ignored(event: str) -> None:
    assert isinstance(map_github(GH, event, {"zen": "Keep it simple."}), Ignored)


def test_assigning_a_login_that_stands_for_a_role_assigns_the_task_to_it() -> None:
    assigned = map_github(
        GH, "issues", issue_event("assigned") | {"assignee": {"login": "rolecall-bot"}}
    )
    assert isinstance(assigned, ItemUpdate)
    assert plan(task(), assigned).changes == (TaskChange(assignee="ops"),)
    unassigned = map_github(
        GH, "issues", issue_event("unassigned") | {"assignee": {"login": "rolecall-bot"}}
    )
    assert isinstance(unassigned, ItemUpdate)
    assert plan(task(assignee="ops"), unassigned).changes == (TaskChange(assignee=""),)
    assert plan(task(assignee="sales"), unassigned).changes == ()  # someone else's now
    other = map_github(GH, "issues", issue_event("assigned") | {"assignee": {"login": "mona"}})
    assert isinstance(other, ItemUpdate) and "mona" in other.notes[0]
    assert plan(task(), other).changes == ()


def test_other_issue_actions_only_make_sure_the_task_exists() -> None:
    labeled = map_github(GH, "issues", issue_event("labeled"))
    assert isinstance(labeled, ItemUpdate)
    assert plan(task(), labeled).changes == ()
    assert plan(None, labeled).create is not None


def test_a_long_github_title_is_cut_not_refused() -> None:
    update = map_github(GH, "issues", issue_event("opened", title="x" * 300))
    assert isinstance(update, ItemUpdate) and update.new is not None
    assert len(update.new.title) == MAX_TITLE and update.new.title.endswith("…")


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"action": "opened"}, "repository: must be a JSON object"),
        (issue_event("opened", number="7"), "issue.number: must be a positive whole number"),
        (issue_event("opened", title=""), "issue.title: must be a non-empty string"),
        (issue_event("opened", state="merged"), "issue.state"),
        ({"issue": {}}, "action: must be a non-empty string"),
        ([1, 2], "the payload: must be a JSON object"),
    ],
)
def test_a_github_payload_that_does_not_map_says_why(event: object, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason) as refused:
        map_github(GH, "issues", event)
    assert refused.value.code == "unmappable_payload"


# --- the generic shape -------------------------------------------------------------------------


def test_the_generic_shape_creates_by_key_in_the_source_s_namespace() -> None:
    update = map_generic(TRACKER, {
        "key": "INC-42", "url": "https://tracker.example/INC-42", "title": "Printer on fire",
        "status": "in_progress", "comment": {"author": "dana", "text": "On it."},
    })  # fmt: skip
    assert update.ref == ExternalRef(source="tracker", key="INC-42",
                                     url="https://tracker.example/INC-42")  # fmt: skip
    steps = plan(None, update)
    assert steps.create == NewItem(title="Printer on fire", body="",
                                   status=TaskStatus.IN_PROGRESS)  # fmt: skip
    assert steps.changes == (TaskChange(status=TaskStatus.IN_PROGRESS),)
    assert steps.comment == "dana: On it."


def test_the_generic_shape_without_a_title_only_updates_a_known_item() -> None:
    update = map_generic(TRACKER, {"key": "INC-42", "status": "done"})
    with pytest.raises(InvalidInput, match="tracker:INC-42") as refused:
        plan(None, update)
    assert refused.value.code == "unknown_item"
    assert plan(task(), update).changes == (TaskChange(status=TaskStatus.DONE),)


@pytest.mark.parametrize(
    ("payload", "error", "code"),
    [
        ({"title": "x"}, InvalidInput, "unmappable_payload"),
        ({"key": "", "title": "x"}, InvalidInput, "unmappable_payload"),
        ({"key": "k", "priority": 1}, InvalidInput, "unknown_field"),
        ({"key": "k", "status": "later"}, InvalidInput, "invalid_status"),
        ({"key": "k", "title": "  "}, InvalidInput, "invalid_title"),
        ({"key": "k", "title": "x" * 201}, TooLarge, "title_too_long"),
        ({"key": "k", "comment": "hi"}, InvalidInput, "unmappable_payload"),
        ({"key": "k", "comment": {"author": "a", "text": ""}}, InvalidInput, "empty_text"),
        ("INC-42", InvalidInput, "unmappable_payload"),
    ],
)
def test_a_generic_payload_that_does_not_map_says_why(
    payload: object, error: type[RolecallError], code: str
) -> None:
    with pytest.raises(error) as refused:
        map_delivery(TRACKER, None, payload)
    assert refused.value.code == code


# --- planning ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "wanted", "path"),
    [
        (TaskStatus.OPEN, TaskStatus.OPEN, ()),
        (TaskStatus.OPEN, TaskStatus.DONE, (TaskStatus.DONE,)),
        (TaskStatus.DONE, TaskStatus.CANCELLED, (TaskStatus.OPEN, TaskStatus.CANCELLED)),
        (TaskStatus.CANCELLED, TaskStatus.IN_PROGRESS, (TaskStatus.OPEN, TaskStatus.IN_PROGRESS)),
    ],
)
def test_a_reported_status_is_reached_through_open_when_there_is_no_direct_move(
    current: TaskStatus, wanted: TaskStatus, path: tuple[TaskStatus, ...]
) -> None:
    assert status_path(current, wanted) == path


def test_what_the_task_already_says_is_no_change() -> None:
    update = map_generic(TRACKER, {"key": "k", "title": "Door sticks", "status": "open"})
    assert plan(task(), update).changes == ()
    closing = map_generic(TRACKER, {"key": "k", "title": "Shut", "status": "cancelled"})
    assert plan(task(TaskStatus.DONE), closing).changes == (
        TaskChange(status=TaskStatus.OPEN),
        TaskChange(title="Shut", status=TaskStatus.CANCELLED),
    )


# --- sources and external keys -----------------------------------------------------------------


def test_a_source_names_its_secret_setting_and_only_github_has_assignees() -> None:
    with pytest.raises(ValidationError, match="NAME of the setting"):
        Source(name="gh", kind=SourceKind.GITHUB, secret="s3cr3t-value")
    with pytest.raises(ValidationError, match="only a github source"):
        Source(name="t", kind=SourceKind.STANDARD, secret="T", assignees={"a": "ops"})
    with pytest.raises(ValidationError):
        Source(name="Bad Name", kind=SourceKind.STANDARD, secret="T")
    with pytest.raises(ValidationError):
        Source.model_validate({"name": "t", "kind": "gitlab", "secret": "T"})
    assert GH.namespace == "github" and TRACKER.namespace == "tracker"


@pytest.mark.parametrize(
    ("raw", "source", "key"),
    [("github:acme/app#123", "github", "acme/app#123"), ("tracker:a:b", "tracker", "a:b")],
)
def test_an_external_key_is_the_source_up_to_the_first_colon(
    raw: str, source: str, key: str
) -> None:
    assert parse_external_key(raw) == ExternalRef(source=source, key=key)
    assert parse_external_key(raw).text == raw


@pytest.mark.parametrize("raw", ["acme/app#123", ":k", "github:", "git hub:k", "github: ", 7])
def test_a_malformed_external_key_is_refused(raw: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_external_key(raw)
    assert refused.value.code == "invalid_external_key"
