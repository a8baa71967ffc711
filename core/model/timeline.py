"""The timeline: per thread, append-only, ordered events.

Every event has a per-thread `seq` (1, 2, 3, … without gaps) and a global `position` (increasing
across all threads, for "everything since"). Timeline order is `(at, seq)`; storage keeps `at`
non-decreasing along `seq` within a thread, so the two orders agree.

Kinds:
- `message`: from a person or a role. An agent's initiative message is a normal message with an
  optional `context` hint `{kind, task?, originating_message?}`, stored and passed on, never
  branched on. What a role's message answers is recorded from what caused the turn that wrote
  it (`in_reply_to`): channels place replies and initiative messages by that.
- `participant_state_changed`: a participant moved between `active` and `removed`.
- `retraction`: an author marks one of its own earlier messages retracted. The message stays and is
  shown as retracted; nothing is edited in place. A message is retracted at most once.
- `system`: a note from the gateway itself.
- `approval_requested` / `approval_resolved`: a role's run asks the conversation's people before
  it acts, and one answer (or the expiry, or the run letting go) resolves it, exactly once
  (`core.model.approvals`).
- `erased`: a person of the thread was erased (`core.model.erasure`): their messages there — in
  a conversation, every message — became tombstones. The one exception to "nothing is edited in
  place", which the law requires: a tombstone keeps its id, `seq`, `position`, kind, author and
  time, and loses its text and context (`erased: true`).

The rules for who may post and who may retract live here too, as pure checks over values.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, NewType

from core.model.approvals import ApprovalOption, Outcome, Resolution, ToolCallAsked
from core.model.errors import Conflict, Gone, InvalidInput, NotAllowed, NotFound, TooLarge
from core.model.membership import ParticipantState
from core.model.participants import Address

ThreadId = NewType("ThreadId", str)
EventId = NewType("EventId", str)

MAX_TEXT_LENGTH = 40_000
MAX_REASON_LENGTH = 1_000
CONTEXT_FIELDS = frozenset({"kind", "task", "originating_message"})

TimelineKey = tuple[datetime, int]
"""An event's place in its thread: `(at, seq)`."""


class EventKind(StrEnum):
    MESSAGE = "message"
    PARTICIPANT_STATE_CHANGED = "participant_state_changed"
    RETRACTION = "retraction"
    SYSTEM = "system"
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_RESOLVED = "approval_resolved"
    ERASED = "erased"


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageContext:
    """The optional hint on an (initiative) message. Stored and passed on, never branched on."""

    kind: str
    task: str | None = None
    originating_message: str | None = None

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind}
        if self.task is not None:
            out["task"] = self.task
        if self.originating_message is not None:
            out["originating_message"] = self.originating_message
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    kind: ClassVar[EventKind]

    id: EventId
    thread_id: ThreadId
    seq: int
    position: int
    at: datetime

    @property
    def key(self) -> TimelineKey:
        return (self.at, self.seq)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message(Event):
    kind: ClassVar[EventKind] = EventKind.MESSAGE

    author: Address
    text: str
    context: MessageContext | None = None
    retracted: bool = False
    channel: str | None = None
    """Where the message was written (`web`, `slack`, `api`, …); None for agents' messages."""
    in_reply_to: EventId | None = None
    """For a role's message written in a turn that began with people's messages: the latest of
    them, which it answers. None for a message on the role's own initiative (a turn woken only
    by task news), for a message not written in a turn, and for people's messages."""
    erased: bool = False
    """A tombstone: its text (empty) and context (None) were erased with a person."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StateChange(Event):
    kind: ClassVar[EventKind] = EventKind.PARTICIPANT_STATE_CHANGED

    participant: Address
    from_state: ParticipantState
    to_state: ParticipantState


@dataclass(frozen=True, slots=True, kw_only=True)
class Retraction(Event):
    kind: ClassVar[EventKind] = EventKind.RETRACTION

    author: Address
    target: EventId
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemNote(Event):
    kind: ClassVar[EventKind] = EventKind.SYSTEM

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested(Event):
    """A role's run asks before it acts; the event's id is the approval's."""

    kind: ClassVar[EventKind] = EventKind.APPROVAL_REQUESTED

    author: Address
    run_id: str
    title: str
    description: str | None
    options: tuple[ApprovalOption, ...]
    tool: ToolCallAsked | None
    approvers: tuple[Address, ...]
    """Who may answer; empty: the conversation's active people."""
    expires_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalResolved(Event):
    """How an approval (`target`, the request's id) was resolved; at most one per request."""

    kind: ClassVar[EventKind] = EventKind.APPROVAL_RESOLVED

    target: EventId
    outcome: Outcome
    option: ApprovalOption | None = None
    by: Address | None = None
    channel: str | None = None

    @property
    def resolution(self) -> Resolution:
        return Resolution(
            outcome=self.outcome, option=self.option, by=self.by, channel=self.channel
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Erased(Event):
    """A person of the thread was erased: `messages` of the thread's messages became tombstones
    (every message of theirs before this event; in a conversation, every message before it)."""

    kind: ClassVar[EventKind] = EventKind.ERASED

    participant: Address
    messages: int


AnyEvent = (
    Message | StateChange | Retraction | SystemNote | ApprovalRequested | ApprovalResolved | Erased
)


# --- validation of what people send ---------------------------------------------------------


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInput("text must be a string", code="invalid_text")
    if not text.strip():
        raise InvalidInput("text must not be empty", code="empty_text")
    if len(text) > MAX_TEXT_LENGTH:
        raise TooLarge(
            f"text is {len(text)} characters; the limit is {MAX_TEXT_LENGTH}",
            code="text_too_long",
        )
    return text


_CHANNEL = re.compile(r"[a-z][a-z0-9_-]{0,15}")


def check_channel(channel: object) -> str:
    """Where a message was written: a short lower-case name (`web`, `slack`, `api`, …)."""
    if not isinstance(channel, str) or not _CHANNEL.fullmatch(channel):
        raise InvalidInput(
            "channel must be a short lower-case name such as 'web', 'slack' or 'api'",
            code="invalid_channel",
        )
    return channel


def check_reason(reason: object) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidInput("reason must be a string", code="invalid_reason")
    if len(reason) > MAX_REASON_LENGTH:
        raise TooLarge(
            f"reason is {len(reason)} characters; the limit is {MAX_REASON_LENGTH}",
            code="reason_too_long",
        )
    return reason


def parse_context(raw: object) -> MessageContext | None:
    """Validate the optional context hint `{kind, task?, originating_message?}`."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InvalidInput(
            "context must be an object {kind, task?, originating_message?}", code="invalid_context"
        )
    unknown = sorted(set(raw) - CONTEXT_FIELDS)
    if unknown:
        raise InvalidInput(
            f"context has unknown fields {unknown}; allowed: kind, task, originating_message",
            code="invalid_context",
        )
    fields: dict[str, Any] = {}
    for name in CONTEXT_FIELDS:
        value = raw.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not value or len(value) > 200:
            raise InvalidInput(
                f"context.{name} must be a non-empty string of at most 200 characters",
                code="invalid_context",
            )
        fields[name] = value
    if "kind" not in fields:
        raise InvalidInput("context.kind is required", code="invalid_context")
    return MessageContext(**fields)


# --- rules ------------------------------------------------------------------------------------


def check_can_act(
    states: dict[Address, ParticipantState], actor: Address, erased: Collection[Address] = ()
) -> None:
    """Only an active member may post or retract in a thread, and never an erased person (one of
    `erased`): their address writes nothing more."""
    if actor in erased:
        raise Gone(f"{actor} was erased", code="person_erased")
    state = states.get(actor)
    if state is None:
        raise NotAllowed(f"{actor} is not a member of this thread", code="not_a_member")
    if state is not ParticipantState.ACTIVE:
        raise NotAllowed(f"{actor} has been removed from this thread", code="participant_removed")


def check_retraction(target: Event | None, author: Address, *, already_retracted: bool) -> Message:
    """Only the author of a message may retract it, and only once."""
    if not isinstance(target, Message):
        raise NotFound("no such message in this thread", code="message_not_found")
    if target.author != author:
        raise NotAllowed(
            f"only the author of a message ({target.author}) may retract it",
            code="not_the_author",
        )
    if already_retracted:
        raise Conflict("this message is already retracted", code="already_retracted")
    return target


def rfc3339(at: datetime) -> str:
    """`2026-11-30T05:23:46.123456Z`: UTC, always with microseconds."""
    if at.tzinfo is not UTC:  # storage's times are UTC already: skip the conversion for them
        at = at.astimezone(UTC)
    return at.isoformat(timespec="microseconds")[:-6] + "Z"
