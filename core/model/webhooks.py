"""Inbound webhooks: the sources an operator configures, and what a delivery does to a task.

A **source** is another system that posts signed deliveries to `POST /hooks/<name>`, defined by
`manifests/sources/<name>.yaml`:

    name: tracker                   # the URL is /hooks/tracker; the file is tracker.yaml
    kind: standard                  # standard | github | generic
    secret: TRACKER_WEBHOOK_SECRET  # the NAME of the setting holding the secret
    assignees:                      # github only: a GitHub login -> the role it stands for
      rolecall-ops: ops

| kind | payloads | signed with | delivery id |
| --- | --- | --- | --- |
| `standard` | the generic shape (below) | Standard Webhooks (`webhook-signature`) | `webhook-id` |
| `github` | GitHub's `issues`, `issue_comment` | `X-Hub-Signature-256` | `X-GitHub-Delivery` |
| `generic` | the generic shape | `X-Hub-Signature-256` | `X-Delivery-Id` |

Every delivery is about one **item** of the source (an issue, a ticket), known by an external
reference `{source, key, url?}`: one task per reference. GitHub items are
`github:<owner>/<repo>#<n>` whichever source received them; the generic shape's are
`<source name>:<key>`.

Here, pure and in two steps (the channel verifies; storage applies, in one transaction):

1. **map** a verified payload to an `ItemUpdate` — which item, how to create its task if no task
   refers to it yet (`new`), what to change, a comment — or to `Ignored(reason)` (a ping, an event
   not mirrored); a payload that cannot map raises `InvalidInput` saying why. First of all, the
   whole payload must hold only acceptable values (`core.model.values.check_value`: its message
   names the field, `payload.issue.title`), whatever the fields mapping reads;
2. **plan** the update against the item's task as it is now (or none): `Plan` — create it, then
   the changes (each one task event), then the comment.

The external system is the truth for its items, so a status it reports is reached even where the
task's rules have no direct move (`done` to `cancelled` goes through `open`), and a status the
task already has is no change at all. GitHub titles longer than a task's are cut (never refused:
the sender cannot fix them); the generic shape is checked like the tasks API.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.model.errors import InvalidInput, RolecallError
from core.model.participants import MAX_NAME_LENGTH
from core.model.tasks import (
    MAX_BODY,
    MAX_COMMENT,
    MAX_EXTERNAL,
    MAX_TITLE,
    MOVES,
    ExternalRef,
    Task,
    TaskChange,
    TaskStatus,
    check_body,
    check_comment,
    check_title,
    parse_status,
)
from core.model.values import check_value

T = TypeVar("T")

NO_CHANGE = TaskChange()

GITHUB = "github"
"""The external source of every GitHub item, whichever webhook source received it."""

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
_SETTING = re.compile(r"[A-Z][A-Z0-9_]*")


class SourceKind(StrEnum):
    STANDARD = "standard"
    GITHUB = "github"
    GENERIC = "generic"


class Source(BaseModel):
    """A webhook source as its manifest defines it. Unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: SourceKind
    secret: str
    """The NAME of the setting (environment variable) holding the secret."""
    description: Annotated[str, Field(max_length=2_000)] = ""
    assignees: dict[str, str] = Field(default_factory=dict)
    """GitHub only: logins that stand for roles; assigning the issue to one assigns the task
    to the role, unassigning it clears the task's assignee."""

    @property
    def signs_its_time(self) -> bool:
        """Whether the signature covers when the delivery was sent (Standard Webhooks: refused
        five minutes on). Only then may the delivery's receipt go after a while: for the other
        kinds the receipt is what refuses a captured delivery sent again, however late."""
        return self.kind is SourceKind.STANDARD

    @field_validator("name")
    @classmethod
    def _source_name(cls, value: str) -> str:
        if not _NAME.fullmatch(value) or len(value) > MAX_NAME_LENGTH:
            raise ValueError(
                "must be lower case letters, digits, '.', '_' or '-', starting with a letter "
                f"or digit, at most {MAX_NAME_LENGTH} characters"
            )
        return value

    @field_validator("secret")
    @classmethod
    def _setting_name(cls, value: str) -> str:
        if not _SETTING.fullmatch(value):
            raise ValueError(
                "must be the NAME of the setting (environment variable) that holds the secret, "
                "like TRACKER_WEBHOOK_SECRET — never the secret itself"
            )
        return value

    @field_validator("assignees")
    @classmethod
    def _roles(cls, value: dict[str, str]) -> dict[str, str]:
        for login, role in value.items():
            if not login or not _NAME.fullmatch(role) or len(role) > MAX_NAME_LENGTH:
                raise ValueError(f"{login!r}: {role!r} is not a role's name")
        return value

    @model_validator(mode="after")
    def _assignees_are_github_logins(self) -> Source:
        if self.assignees and self.kind is not SourceKind.GITHUB:
            raise ValueError("assignees: only a github source has them (GitHub logins)")
        return self

    @property
    def namespace(self) -> str:
        """The `source` of the external references of this source's items."""
        return GITHUB if self.kind is SourceKind.GITHUB else self.name


# --- what a delivery says ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NewItem:
    """How to create the task of an item no task refers to yet."""

    title: str
    body: str
    status: TaskStatus = TaskStatus.OPEN


@dataclass(frozen=True, slots=True, kw_only=True)
class Comment:
    author: str
    """Who wrote it in the other system (a GitHub login, say): quoted in the comment."""
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemUpdate:
    """What a delivery says about one item."""

    ref: ExternalRef
    new: NewItem | None
    """None: the delivery cannot create the task (the generic shape without a title)."""
    change: TaskChange = NO_CHANGE
    unassign: str | None = None
    """A role to take off the task, if it is the task's assignee."""
    comment: Comment | None = None
    notes: tuple[str, ...] = ()
    """What the delivery said that is not mirrored (for the answer to the sender)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ignored:
    """A delivery that is recorded and does nothing."""

    reason: str


Mapped = ItemUpdate | Ignored


def map_delivery(source: Source, event: str | None, payload: object) -> Mapped:
    """What a verified delivery to `source` says; `event` is GitHub's `X-GitHub-Event`."""
    check_value(payload, "payload")
    if source.kind is SourceKind.GITHUB:
        return map_github(source, event or "", payload)
    return map_generic(source, payload)


# --- GitHub --------------------------------------------------------------------------------

_STATUS_ACTIONS = {"closed", "reopened", "deleted"}


def map_github(source: Source, event: str, payload: object) -> Mapped:
    """`issues` and `issue_comment` events onto the issue's task; a `ping` and other events
    are ignored. Every event about an issue carries the issue: the first one creates the task."""
    if event == "ping":
        return Ignored(reason="ping: the hook works; nothing to do")
    if event not in ("issues", "issue_comment"):
        return Ignored(reason=f"GitHub event {event!r} is not mirrored (issues and issue_comment)")
    body = _object(payload, "the payload")
    action = _string(body, "action")
    if event == "issue_comment" and action != "created":
        return Ignored(reason=f"issue_comment {action}: only new comments are mirrored")
    ref, new = _github_issue(body)
    if event == "issue_comment":
        comment = _object(body.get("comment"), "comment")
        login = _string(_object(comment.get("user"), "comment.user"), "login", "comment.user.login")
        text = comment.get("body")
        if not isinstance(text, str):
            raise _unmappable("comment.body: must be a string")
        return ItemUpdate(ref=ref, new=new, comment=Comment(author=login, text=text))
    if action in ("opened", "edited"):
        change = TaskChange(title=new.title, body=new.body)
        return ItemUpdate(ref=ref, new=new, change=change)
    if action in _STATUS_ACTIONS:
        wanted = TaskStatus.CANCELLED if action == "deleted" else new.status
        return ItemUpdate(ref=ref, new=new, change=TaskChange(status=wanted))
    if action in ("assigned", "unassigned"):
        return _github_assignment(source, body, action, ref, new)
    return ItemUpdate(ref=ref, new=new, notes=(f"issues {action}: not mirrored",))


def _github_issue(body: Mapping[str, Any]) -> tuple[ExternalRef, NewItem]:
    repo = _object(body.get("repository"), "repository")
    repository = _string(repo, "full_name", "repository.full_name")
    issue = _object(body.get("issue"), "issue")
    number = issue.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise _unmappable("issue.number: must be a positive whole number")
    title = _string(issue, "title", "issue.title")
    text = issue.get("body")
    if text is not None and not isinstance(text, str):
        raise _unmappable("issue.body: must be a string or null")
    url = issue.get("html_url")
    if url is not None and (not isinstance(url, str) or len(url) > MAX_EXTERNAL):
        url = None
    state = issue.get("state")
    if state not in ("open", "closed"):
        raise _unmappable("issue.state: must be 'open' or 'closed'")
    key = f"{repository}#{number}"
    if len(key) > MAX_EXTERNAL:
        raise _unmappable(f"issue: the key {key[:80]!r}… is over {MAX_EXTERNAL} characters")
    status = TaskStatus.OPEN
    if state == "closed":
        not_planned = issue.get("state_reason") == "not_planned"
        status = TaskStatus.CANCELLED if not_planned else TaskStatus.DONE
    return (
        ExternalRef(source=GITHUB, key=key, url=url),
        NewItem(
            title=_cut(title.strip(), MAX_TITLE), body=_cut(text or "", MAX_BODY), status=status
        ),
    )


def _github_assignment(
    source: Source, body: Mapping[str, Any], action: str, ref: ExternalRef, new: NewItem
) -> ItemUpdate:
    login = _string(_object(body.get("assignee"), "assignee"), "login", "assignee.login")
    role = source.assignees.get(login)
    if role is None:
        note = f"issues {action}: {login!r} stands for no role (the source's assignees)"
        return ItemUpdate(ref=ref, new=new, notes=(note,))
    if action == "assigned":
        return ItemUpdate(ref=ref, new=new, change=TaskChange(assignee=role))
    return ItemUpdate(ref=ref, new=new, unassign=role)


# --- the generic shape ---------------------------------------------------------------------

GENERIC_FIELDS = ("key", "url", "title", "body", "status", "comment")


def map_generic(source: Source, payload: object) -> ItemUpdate:
    """`{"key", "url"?, "title"?, "body"?, "status"?, "comment"?: {"author", "text"}}`: create
    (a title needed) or update the task of `<source>:<key>`, then comment on it."""
    body = _object(payload, "the payload")
    for name in body:
        if name not in GENERIC_FIELDS:
            raise InvalidInput(
                f"unknown field {name!r}; the generic shape takes {', '.join(GENERIC_FIELDS)}",
                code="unknown_field",
            )
    key = body.get("key")
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_EXTERNAL:
        raise _unmappable(f"key: must be a non-empty string of at most {MAX_EXTERNAL} characters")
    url = _optional(body, "url", _url)
    title = _optional(body, "title", check_title)
    text = _optional(body, "body", check_body)
    status = _optional(body, "status", parse_status)
    comment = _optional(body, "comment", _generic_comment)
    new = None
    if title is not None:
        new = NewItem(title=title, body=text or "", status=status or TaskStatus.OPEN)
    return ItemUpdate(
        ref=ExternalRef(source=source.namespace, key=key, url=url),
        new=new,
        change=TaskChange(title=title, body=text, status=status),
        comment=comment,
    )


def _url(raw: object) -> str:
    if not isinstance(raw, str) or not raw or len(raw) > MAX_EXTERNAL:
        raise _unmappable(f"must be a string of 1 to {MAX_EXTERNAL} characters")
    return raw


def _generic_comment(raw: object) -> Comment:
    if not isinstance(raw, dict) or set(raw) != {"author", "text"}:
        raise _unmappable('must be {"author": "…", "text": "…"}')
    author = raw["author"]
    if not isinstance(author, str) or not author.strip() or len(author) > 200:
        raise _unmappable("author: must be a non-empty string of at most 200 characters")
    return Comment(author=author.strip(), text=_named("text", check_comment, raw["text"]))


# --- planning against the task as it is ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What to do, in order: create the task (`create`), apply `changes` (each one task event),
    add `comment` (by the source)."""

    create: NewItem | None = None
    changes: tuple[TaskChange, ...] = ()
    comment: str | None = None


def plan(task: Task | None, update: ItemUpdate) -> Plan:
    """The steps that bring `task` (None: no task refers to the item yet) in line with
    `update`; an empty plan when it already is."""
    change = update.change
    if task is None:
        if update.new is None:
            raise InvalidInput(
                f"no task refers to {update.ref.text} yet, and a delivery that creates one needs "
                "a title",
                code="unknown_item",
            )
        status, title, body, assignee = TaskStatus.OPEN, update.new.title, update.new.body, None
        wanted: TaskStatus | None = change.status or update.new.status
    else:
        status, title, body, assignee = task.status, task.title, task.body, task.assignee
        wanted = change.status
    moves = status_path(status, wanted) if wanted is not None else ()
    new_assignee = change.assignee
    if update.unassign is not None and update.unassign == assignee:
        new_assignee = ""
    if new_assignee is not None and (new_assignee or None) == assignee:
        new_assignee = None
    last = TaskChange(
        title=change.title if change.title not in (None, title) else None,
        body=change.body if change.body not in (None, body) else None,
        status=moves[-1] if moves else None,
        assignee=new_assignee,
    )
    changes = tuple(TaskChange(status=move) for move in moves[:-1])
    if last != NO_CHANGE:
        changes += (last,)
    comment = update.comment
    return Plan(
        create=update.new if task is None else None,
        changes=changes,
        comment=_cut(f"{comment.author}: {comment.text}", MAX_COMMENT) if comment else None,
    )


def status_path(current: TaskStatus, wanted: TaskStatus) -> tuple[TaskStatus, ...]:
    """The moves from `current` to `wanted` (none when it is there; through `open` when the
    rules have no direct move)."""
    if wanted == current:
        return ()
    if wanted in MOVES[current]:
        return (wanted,)
    return (TaskStatus.OPEN, wanted)


# --- reading payloads ----------------------------------------------------------------------


def _unmappable(reason: str) -> InvalidInput:
    return InvalidInput(reason, code="unmappable_payload")


def _object(raw: object, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, dict):
        raise _unmappable(f"{where}: must be a JSON object")
    return raw


def _string(obj: Mapping[str, Any], name: str, where: str | None = None) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _unmappable(f"{where or name}: must be a non-empty string")
    return value


def _optional(body: Mapping[str, Any], name: str, parse: Callable[[Any], T]) -> T | None:
    raw = body.get(name)
    return None if raw is None else _named(name, parse, raw)


def _named(name: str, parse: Callable[[Any], T], raw: object) -> T:
    try:
        return parse(raw)
    except RolecallError as error:
        raise type(error)(f"{name}: {error.message}", code=error.code) from None


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
