"""Between database rows and the core's values: times as integer microseconds, events by kind."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from core.membership import ParticipantState
from core.participants import Address
from core.timeline import (
    AnyEvent,
    EventId,
    EventKind,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    SystemNote,
    ThreadId,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(at: datetime) -> int:
    delta = at - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def event_from_row(row: Mapping[Any, Any], *, retracted: bool = False) -> AnyEvent:
    common: dict[str, Any] = {
        "id": EventId(row["id"]),
        "thread_id": ThreadId(row["thread_id"]),
        "seq": row["seq"],
        "position": row["position"],
        "at": from_micros(row["at"]),
    }
    kind = EventKind(row["kind"])
    if kind is EventKind.MESSAGE:
        context = row["context"]
        return Message(
            **common,
            author=Address(row["author"]),
            text=row["text"],
            context=MessageContext(**context) if context else None,
            retracted=retracted,
        )
    if kind is EventKind.PARTICIPANT_STATE_CHANGED:
        return StateChange(
            **common,
            participant=Address(row["participant"]),
            from_state=ParticipantState(row["from_state"]),
            to_state=ParticipantState(row["to_state"]),
        )
    if kind is EventKind.RETRACTION:
        return Retraction(
            **common,
            author=Address(row["author"]),
            target=EventId(row["target"]),
            reason=row["reason"],
        )
    return SystemNote(**common, text=row["text"])


def event_to_row(event: AnyEvent) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": event.id,
        "thread_id": event.thread_id,
        "seq": event.seq,
        "position": event.position,
        "at": to_micros(event.at),
        "kind": event.kind.value,
        "author": None,
        "text": None,
        "context": None,
        "participant": None,
        "from_state": None,
        "to_state": None,
        "target": None,
        "reason": None,
    }
    if isinstance(event, Message):
        row.update(
            author=event.author,
            text=event.text,
            context=event.context.to_json() if event.context else None,
        )
    elif isinstance(event, StateChange):
        row.update(
            participant=event.participant,
            from_state=event.from_state.value,
            to_state=event.to_state.value,
        )
    elif isinstance(event, Retraction):
        row.update(author=event.author, target=event.target, reason=event.reason)
    else:
        row.update(text=event.text)
    return row
