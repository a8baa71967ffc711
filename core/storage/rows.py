"""Between database rows and the core's values: times as integer microseconds, events by kind."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from core.membership import ParticipantState
from core.timeline import (
    AnyEvent,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    SystemNote,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(at: datetime) -> int:
    delta = at - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def event_from_row(row: Sequence[Any], *, retracted: bool = False) -> AnyEvent:
    """An event from a full row of `events`, its columns in table order (`select(events)`)."""
    (position, id_, thread_id, seq, micros, kind, author, text, context, participant,
     from_state, to_state, target, reason, channel) = row  # fmt: skip
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
    raise ValueError(f"unknown event kind {kind!r} in the events table")


_STATES = {state.value: state for state in ParticipantState}


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
        "channel": None,
    }
    if isinstance(event, Message):
        row.update(
            author=event.author,
            text=event.text,
            context=event.context.to_json() if event.context else None,
            channel=event.channel,
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
