"""Between database rows and the core's values: times as integer microseconds, events by kind."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from core.model.approvals import ApprovalOption, OptionKind, Outcome, ToolCallAsked
from core.model.membership import ParticipantState
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    SystemNote,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

TOMBSTONE = {"erased": True}
"""The `detail` of a message whose text and context were erased with a person."""


def to_micros(at: datetime) -> int:
    delta = at - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def event_from_row(row: Sequence[Any], *, retracted: bool = False) -> AnyEvent:
    """An event from a full row of `events`, its columns in table order (`select(events)`)."""
    (position, id_, thread_id, seq, micros, kind, author, text, context, participant,
     from_state, to_state, target, reason, channel, in_reply_to, detail) = row  # fmt: skip
    at = from_micros(micros)
    if kind == "message":
        return Message(
            id=id_,
            thread_id=thread_id,
            seq=seq,
            position=position,
            at=at,
            author=author,
            text=text,
            context=MessageContext(**context) if context else None,
            retracted=retracted,
            channel=channel,
            in_reply_to=in_reply_to,
            erased=bool(detail and detail.get("erased")),
        )
    if kind == "participant_state_changed":
        return StateChange(
            id=id_,
            thread_id=thread_id,
            seq=seq,
            position=position,
            at=at,
            participant=participant,
            from_state=_STATES[from_state],
            to_state=_STATES[to_state],
        )
    if kind == "retraction":
        return Retraction(
            id=id_,
            thread_id=thread_id,
            seq=seq,
            position=position,
            at=at,
            author=author,
            target=target,
            reason=reason,
        )
    if kind == "system":
        return SystemNote(id=id_, thread_id=thread_id, seq=seq, position=position, at=at, text=text)
    if kind == "approval_requested":
        tool = detail.get("tool")
        return ApprovalRequested(
            id=id_,
            thread_id=thread_id,
            seq=seq,
            position=position,
            at=at,
            author=author,
            run_id=detail["run_id"],
            title=text,
            description=reason,
            options=tuple(_option(o) for o in detail["options"]),
            tool=ToolCallAsked(name=tool["name"], arguments=tool["arguments"]) if tool else None,
            approvers=tuple(detail["approvers"]),
            expires_at=from_micros(detail["expires_at"]),
        )
    if kind == "approval_resolved":
        option = detail.get("option")
        return ApprovalResolved(
            id=id_,
            thread_id=thread_id,
            seq=seq,
            position=position,
            at=at,
            target=target,
            outcome=Outcome(detail["outcome"]),
            option=_option(option) if option else None,
            by=author,
            channel=channel,
        )
    if kind == "erased":
        return Erased(
            id=id_,
            thread_id=thread_id,
            seq=seq,
            position=position,
            at=at,
            participant=participant,
            messages=detail["messages"],
        )
    raise ValueError(f"unknown event kind {kind!r} in the events table")


_STATES = {state.value: state for state in ParticipantState}


def _option(raw: dict[str, str]) -> ApprovalOption:
    return ApprovalOption(id=raw["id"], label=raw["label"], kind=OptionKind(raw["kind"]))


EVENT_COLUMNS = (
    "position", "id", "thread_id", "seq", "at", "kind", "author", "text", "context",
    "participant", "from_state", "to_state", "target", "reason", "channel", "in_reply_to", "detail",
)  # fmt: skip
"""The columns of `events` in table order: the order of `event_values`."""


def event_values(event: AnyEvent) -> tuple[Any, ...]:
    """The event's row of `events`, its values in `EVENT_COLUMNS` order (`context` as the JSON
    object the column's type stores)."""
    common = (event.position, event.id, event.thread_id, event.seq, to_micros(event.at))
    if isinstance(event, Message):
        context = event.context.to_json() if event.context else None
        erased = TOMBSTONE if event.erased else None
        return (*common, "message", event.author, event.text, context,
                None, None, None, None, None, event.channel, event.in_reply_to,
                erased)  # fmt: skip
    if isinstance(event, StateChange):
        return (*common, "participant_state_changed", None, None, None, event.participant,
                event.from_state.value, event.to_state.value, None, None, None, None,
                None)  # fmt: skip
    if isinstance(event, Retraction):
        return (*common, "retraction", event.author, None, None,
                None, None, None, event.target, event.reason, None, None, None)  # fmt: skip
    if isinstance(event, ApprovalRequested):
        detail = {
            "run_id": event.run_id,
            "options": [o.to_json() for o in event.options],
            "tool": event.tool.to_json() if event.tool else None,
            "approvers": list(event.approvers),
            "expires_at": to_micros(event.expires_at),
        }
        return (*common, "approval_requested", event.author, event.title, None,
                None, None, None, None, event.description, None, None, detail)  # fmt: skip
    if isinstance(event, ApprovalResolved):
        detail = {
            "outcome": event.outcome.value,
            "option": event.option.to_json() if event.option else None,
        }
        return (*common, "approval_resolved", event.by, None, None,
                None, None, None, event.target, None, event.channel, None, detail)  # fmt: skip
    if isinstance(event, Erased):
        return (*common, "erased", None, None, None, event.participant,
                None, None, None, None, None, None, {"messages": event.messages})  # fmt: skip
    return (*common, "system", None, event.text, None,
            None, None, None, None, None, None, None, None)  # fmt: skip
