"""Replies as they are being written: what the run host tells channels that show a reply while
the agent writes it (Slack streams it). Drafts are never stored; the committed `Reply` is what
was said. A draft ends when its reply is complete (`END`: the reply's message follows, in order
with the turn's other replies) or is abandoned with its attempt (`ABANDONED`: a failure or a
cancel; a retry drafts again from nothing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from core.model.timeline import ThreadId


class DraftKind(StrEnum):
    CHUNK = "chunk"
    END = "end"
    ABANDONED = "abandoned"


@dataclass(frozen=True, slots=True)
class Draft:
    thread_id: ThreadId
    role: str
    kind: DraftKind
    text: str = ""
    initiative: bool = False
    """The reply is the role's own initiative (its turn was woken by task news, not by a
    person's message): channels show it as a message of its own, not under a person's."""


DraftListener = Callable[[Draft], None]
