"""What one turn of a run is told: the news since its cursor, as plain JSON-ready values.

A driver (`conversation.py`, `task.py`) builds the `Prompt`; the run host hands it to the role's
runtime, which renders it for its agent. An agent sees events with their `seq`, authors and text,
never storage ids it must carry around.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    EventId,
    Message,
    Retraction,
    StateChange,
    SystemNote,
    rfc3339,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptEvent:
    """An event as an agent is told it: plain values, JSON-ready."""

    kind: str
    id: str
    seq: int
    at: datetime
    author: str | None = None
    text: str | None = None
    retracted: bool = False
    participant: str | None = None
    state: str | None = None
    target_seq: int | None = None
    erased: bool = False
    """A message whose text was erased with a person (a tombstone: no text)."""

    @classmethod
    def of(cls, event: AnyEvent, *, seq_of: Mapping[EventId, int] | None = None) -> PromptEvent:
        kind, seq, at, id_ = event.kind.value, event.seq, event.at, event.id
        if isinstance(event, Message):
            return cls(
                kind=kind,
                id=id_,
                seq=seq,
                at=at,
                author=event.author,
                text=None if event.erased else event.text,
                retracted=event.retracted,
                erased=event.erased,
            )
        if isinstance(event, StateChange):
            return cls(
                kind=kind,
                id=id_,
                seq=seq,
                at=at,
                participant=event.participant,
                state=event.to_state.value,
            )
        if isinstance(event, Retraction):
            target = (seq_of or {}).get(event.target)
            return cls(
                kind=kind,
                id=id_,
                seq=seq,
                at=at,
                author=event.author,
                text=event.reason,
                target_seq=target,
            )
        if isinstance(event, ApprovalRequested):
            return cls(kind=kind, id=id_, seq=seq, at=at, author=event.author, text=event.title)
        if isinstance(event, ApprovalResolved):
            resolution = event.resolution
            return cls(
                kind=kind,
                id=id_,
                seq=seq,
                at=at,
                author=resolution.by,
                text=resolution.says(),
                target_seq=(seq_of or {}).get(event.target),
            )
        if isinstance(event, Erased):
            return cls(kind=kind, id=id_, seq=seq, at=at, participant=event.participant)
        assert isinstance(event, SystemNote)
        return cls(kind=kind, id=id_, seq=seq, at=at, text=event.text)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "id": self.id,
            "seq": self.seq,
            "at": rfc3339(self.at),
        }
        for name in ("author", "text", "participant", "state", "target_seq"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.retracted:
            out["retracted"] = True
        if self.erased:
            out["erased"] = True
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """What one turn is told."""

    role: str
    instructions: str
    news: Sequence[PromptEvent]
    """Everything new since the run last looked, in order."""
    pending: int
    """How many of `news` are people's messages waiting for an answer."""
    more: bool = False
    """More news lies beyond this turn's read; it comes in the next turn."""
    opening: bool = False
    """The first turn of a session: `recent` carries the conversation so far (bounded) and
    `subscribed` the tasks it watches."""
    recent: Sequence[PromptEvent] = ()
    tasks: Sequence[Mapping[str, Any]] = ()
    """Task news as one digest: `{id, title, status, assignee, events: [{seq, kind, by,
    changes, text}]}` per task."""
    subscribed: Sequence[Mapping[str, Any]] = ()
    task: Mapping[str, Any] | None = None
    """For a run on a task: the task as it is now (`{id, title, status, assignee, body}`); what
    the agent answers is recorded on it as comments."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "news": [e.to_json() for e in self.news],
            "pending": self.pending,
            "more": self.more,
            "opening": self.opening,
        }
        if self.opening:
            out["recent"] = [e.to_json() for e in self.recent]
            out["subscribed"] = [dict(t) for t in self.subscribed]
        if self.tasks:
            out["tasks"] = [dict(t) for t in self.tasks]
        if self.task is not None:
            out["task"] = dict(self.task)
        return out
