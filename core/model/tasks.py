"""Tasks: tracked work items that people, agents and other systems see and change.

A task has a title, a body, a status, an optional assignee role and an optional external
reference `{source, key, url?}` (an issue in a tracker, kept in step by webhooks:
`core/model/webhooks.py`), written `<source>:<key>` where agents name it. Nothing
about a task changes in place without a **task event** saying who changed it — a person, a run
(an agent; which run) or an external source — and what changed. Comments are task events too.

Status moves, the rules written here:

    open         -> in_progress | done | cancelled
    in_progress  -> open | done | cancelled
    done         -> open            (reopen)
    cancelled    -> open            (reopen)

A move to the status a task already has is refused (`Conflict`), as is any move not listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, NewType

from core.model.errors import Conflict, InvalidInput, TooLarge
from core.model.participants import Address, ParticipantKind, kind_of, parse_address
from core.model.timeline import rfc3339

TaskId = NewType("TaskId", str)

MAX_TITLE = 200
MAX_BODY = 40_000
MAX_COMMENT = 40_000


class TaskStatus(StrEnum):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    CANCELLED = "cancelled"


MOVES: Mapping[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.OPEN: frozenset({TaskStatus.IN_PROGRESS, TaskStatus.DONE, TaskStatus.CANCELLED}),
    TaskStatus.IN_PROGRESS: frozenset({TaskStatus.OPEN, TaskStatus.DONE, TaskStatus.CANCELLED}),
    TaskStatus.DONE: frozenset({TaskStatus.OPEN}),
    TaskStatus.CANCELLED: frozenset({TaskStatus.OPEN}),
}


class TaskEventKind(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    COMMENTED = "commented"


class ActorKind(StrEnum):
    PERSON = "person"
    RUN = "run"
    SOURCE = "source"


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor:
    """Who made a change: a person (`person:<slug>`), a run (its role's address and its id), or
    an external source (its name)."""

    kind: ActorKind
    name: str
    run_id: str | None = None

    @classmethod
    def person(cls, address: Address) -> Actor:
        return cls(kind=ActorKind.PERSON, name=address)

    @classmethod
    def source(cls, name: str) -> Actor:
        """A webhook source, by the name the operator gave it."""
        return cls(kind=ActorKind.SOURCE, name=name)

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind.value, "name": self.name}
        if self.run_id is not None:
            out["run_id"] = self.run_id
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalRef:
    source: str
    key: str
    url: str | None = None

    @property
    def text(self) -> str:
        """The external key as agents and operators write it: `<source>:<key>`."""
        return f"{self.source}:{self.key}"

    def to_json(self) -> dict[str, str]:
        out = {"source": self.source, "key": self.key}
        if self.url is not None:
            out["url"] = self.url
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    id: TaskId
    title: str
    body: str
    status: TaskStatus
    assignee: str | None
    external: ExternalRef | None
    created_at: datetime
    updated_at: datetime
    events: int
    """How many task events it has (the `seq` of its latest)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "body": self.body,
            "status": self.status.value,
            "assignee": self.assignee,
            "external": self.external.to_json() if self.external else None,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
            "events": self.events,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskEvent:
    id: str
    task_id: TaskId
    seq: int
    position: int
    at: datetime
    kind: TaskEventKind
    actor: Actor
    changes: Mapping[str, Any]
    """For `created`, the task's fields; for `updated`, `{field: {"from": …, "to": …}}`."""
    text: str | None = None
    """A comment's text."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task_id": self.task_id,
            "seq": self.seq,
            "position": self.position,
            "at": rfc3339(self.at),
            "kind": self.kind.value,
            "actor": self.actor.to_json(),
            "changes": dict(self.changes),
            "text": self.text,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskChange:
    """A requested update: None leaves a field as it is (`assignee`: "" clears it)."""

    title: str | None = None
    body: str | None = None
    status: TaskStatus | None = None
    assignee: str | None = None


def check_move(current: TaskStatus, wanted: TaskStatus) -> None:
    if wanted == current:
        raise Conflict(f"the task is already {current.value}", code="already_in_status")
    if wanted not in MOVES[current]:
        raise Conflict(
            f"a task that is {current.value} cannot become {wanted.value}; it can become "
            + ", ".join(sorted(s.value for s in MOVES[current])),
            code="illegal_status_change",
        )


def diff(task: Task, change: TaskChange) -> dict[str, dict[str, Any]]:
    """What `change` would change in `task`: `{field: {"from", "to"}}` (empty: nothing)."""
    out: dict[str, dict[str, Any]] = {}
    if change.title is not None and change.title != task.title:
        out["title"] = {"from": task.title, "to": change.title}
    if change.body is not None and change.body != task.body:
        out["body"] = {"from": task.body, "to": change.body}
    if change.status is not None:
        check_move(task.status, change.status)
        out["status"] = {"from": task.status.value, "to": change.status.value}
    if change.assignee is not None:
        wanted = change.assignee or None
        if wanted != task.assignee:
            out["assignee"] = {"from": task.assignee, "to": wanted}
    return out


# --- validation of what people send ---------------------------------------------------------


def check_title(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("title must be a non-empty string", code="invalid_title")
    if len(raw) > MAX_TITLE:
        raise TooLarge(
            f"title is {len(raw)} characters; the limit is {MAX_TITLE}", code="title_too_long"
        )
    return raw.strip()


def check_body(raw: object) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise InvalidInput("body must be a string", code="invalid_body_text")
    if len(raw) > MAX_BODY:
        raise TooLarge(
            f"body is {len(raw)} characters; the limit is {MAX_BODY}", code="body_too_long"
        )
    return raw


def parse_status(raw: object) -> TaskStatus:
    try:
        return TaskStatus(str(raw))
    except ValueError:
        raise InvalidInput(
            "status must be one of " + ", ".join(s.value for s in TaskStatus), code="invalid_status"
        ) from None


def parse_assignee(raw: object) -> str | None:
    """A role's name (or its address `role:<name>`); None or "" for nobody."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise InvalidInput("assignee must be a role's name", code="invalid_assignee")
    address = parse_address(raw if raw.startswith("role:") else f"role:{raw}")
    if kind_of(address) is not ParticipantKind.ROLE:
        raise InvalidInput("assignee must be a role", code="invalid_assignee")
    return address.removeprefix("role:")


def parse_external(raw: object) -> ExternalRef | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not set(raw) <= {"source", "key", "url"}:
        raise InvalidInput("external must be {source, key, url?}", code="invalid_external")
    fields = {}
    for name in ("source", "key", "url"):
        value = raw.get(name)
        if value is None and name == "url":
            continue
        if not isinstance(value, str) or not value or len(value) > 500:
            raise InvalidInput(
                f"external.{name} must be a non-empty string of at most 500 characters",
                code="invalid_external",
            )
        fields[name] = value
    return ExternalRef(**fields)


MAX_EXTERNAL = 500
_EXTERNAL_SOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def parse_external_key(raw: object) -> ExternalRef:
    """An external key, `<source>:<key>` (`github:owner/repo#123`): the source up to the first
    `:`, the key after it."""
    shape = 'an external key is "<source>:<key>", like "github:owner/repo#123"'
    if not isinstance(raw, str):
        raise InvalidInput(f"{shape}, a string", code="invalid_external_key")
    source, colon, key = raw.partition(":")
    if not colon or not _EXTERNAL_SOURCE.fullmatch(source) or len(source) > MAX_EXTERNAL:
        raise InvalidInput(
            f"{shape}; the source is letters, digits, '.', '_' or '-' (got {raw[:80]!r})",
            code="invalid_external_key",
        )
    if not key.strip() or len(key) > MAX_EXTERNAL or not key.isprintable():
        raise InvalidInput(
            f"{shape}; the key is 1 to {MAX_EXTERNAL} printable characters (got {raw[:80]!r})",
            code="invalid_external_key",
        )
    return ExternalRef(source=source, key=key)


def check_comment(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("text must be a non-empty string", code="empty_text")
    if len(raw) > MAX_COMMENT:
        raise TooLarge(
            f"text is {len(raw)} characters; the limit is {MAX_COMMENT}", code="text_too_long"
        )
    return raw
