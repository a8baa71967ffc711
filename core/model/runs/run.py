"""What a run is: the unit of agent work.

A run works **in a conversation** (one per role participant per thread, created when first
needed and lasting as long as the thread) or **on a task** (one per task assigned to a role). It
has a **cursor** — for a conversation run, the `seq` in its thread up to which it has looked — and
**sessions**, the agent's working contexts: the current one is resumed after idle sleep; "start
fresh" opens the next. Every finished turn is kept as a **turn** record (the transcript).

A run's status is `ready`, or `failed` after a turn failed every attempt; the next turn that
succeeds makes it `ready` again. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, NewType

from core.model.participants import Address
from core.model.timeline import EventId, ThreadId

RunId = NewType("RunId", str)
SessionId = NewType("SessionId", str)


class RunKind(StrEnum):
    CONVERSATION = "conversation"
    TASK = "task"


class RunStatus(StrEnum):
    READY = "ready"
    FAILED = "failed"


class TurnCause(StrEnum):
    MESSAGE = "message"  # a person's message: the turn ends in a reply to them
    NEWS = "news"  # anything else (task news): silent unless the agent sends a message


class TurnOutcome(StrEnum):
    REPLIED = "replied"  # the agent said something
    SILENT = "silent"  # a news turn in which the agent chose to say nothing
    NO_ANSWER = "no_answer"  # a message turn without a reply: the people were told so
    FAILED = "failed"  # every attempt failed: the people were told so, the run is failed
    CANCELLED = "cancelled"  # stopped by control
    SUPERSEDED = "superseded"  # the run was moved on elsewhere meanwhile; nothing was posted


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    id: SessionId
    number: int
    opened_at: datetime
    state: Mapping[str, Any] | None
    """What the runtime needs to resume the session; None until its first (opening) turn."""

    @property
    def opened(self) -> bool:
        return self.state is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    id: RunId
    kind: RunKind
    role: str
    thread_id: ThreadId | None
    task_id: str | None
    cursor: int
    task_cursor: int
    """The task-event position up to which it has looked (news of the tasks it subscribes to)."""
    status: RunStatus
    failures: int
    last_error: str | None
    session: Session
    turns: int
    created_at: datetime
    updated_at: datetime

    @property
    def role_address(self) -> Address:
        return Address(f"role:{self.role}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One try at a turn: when it started and ended, and why it failed (None: it did not)."""

    started_at: datetime
    finished_at: datetime
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A finished turn, as the transcript keeps it."""

    id: str
    run_id: RunId
    number: int
    session_id: SessionId
    cause: TurnCause
    outcome: TurnOutcome
    cursor_from: int
    cursor_to: int
    queued_at: datetime
    started_at: datetime
    finished_at: datetime
    prompt: Mapping[str, Any]
    steps: Sequence[Mapping[str, Any]]
    replies: Sequence[EventId]
    attempts: Sequence[Attempt]
    error: str | None
    trace_id: str | None = None
    """The OpenTelemetry trace the turn ran in, when it was traced (docs/tracing.md)."""
