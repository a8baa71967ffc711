"""Erasing a person, on request: what goes, what stays, and the rules that decide it.

Erasure is the one exception to "nothing is edited in place", and the law requires it. For a
person P (and every person merged into P: the same human under an earlier identity):

- **P** stays as a tombstone: the slug, inactive for good (`erased_at`), never anyone's again —
  no person can be created under it, no derived slug takes it, and a participant set that names
  it no longer resolves (410 `person_erased`), so the address can never reach the old data. The
  display name becomes `ERASED_NAME`, the email goes.
- **P's identities and link codes** go: the same Slack user or site visitor who writes again is
  a new person, in a new conversation.
- **Messages**, in each thread P is a member of: P's own become tombstones — same id, `seq`,
  `position`, kind, author and time, no text, no context, `erased: true`. In a conversation
  (a thread whose only people are P) every message goes, the role's too: the role's replies
  answer, and often repeat, what P said. In a group thread the others' messages stay. The reason
  of a retraction P wrote goes. Each thread then gets an `erased` event, which channels and
  outbound endpoints follow (the platform copies are deleted where the platform allows).
- **Memory** stored in P's threads goes, whatever its visibility.
- **Transcripts** of the turns of runs in P's threads keep their times, counts and outcomes and
  lose their prompt and steps; the runs' sessions lose their saved state (`start fresh` follows).

What stays is counted, not read: that the threads existed, who else was in them, how many events
they hold, the tasks (a tracker's record, not P's conversation), the audit trail's record that P
was erased, and what other systems received before the erasure.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import Any

from core.model.errors import Conflict
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.people import Person

ERASED_NAME = "(erased)"
"""An erased person's display name."""

ERASED_PROMPT: dict[str, Any] = {"erased": True}
"""The prompt of a turn whose transcript was erased."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Erasure:
    """How much an erasure removes (before: a plan; after: what went)."""

    threads: int = 0
    messages: int = 0
    """Messages that become tombstones (P's own; in a conversation, all)."""
    memory_entries: int = 0
    turns: int = 0
    """Transcripts that lose their prompt and steps."""
    identities: int = 0
    link_codes: int = 0
    slack_posts: int = 0
    """Posts the gateway made in Slack for these threads, to be deleted (`chat.delete`)."""

    def __add__(self, other: Erasure) -> Erasure:
        return Erasure(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def to_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def describe(self) -> str:
        """What it removes, in words: "2 threads, 5 messages, …, and 1 link code"."""
        said = [_counted(getattr(self, name), *words) for name, *words in _WORDS]
        return ", ".join(said[:-1]) + " and " + said[-1]


_WORDS = (
    ("threads", "thread", "threads"),
    ("messages", "message", "messages"),
    ("memory_entries", "memory entry", "memory entries"),
    ("turns", "transcript", "transcripts"),
    ("slack_posts", "Slack post", "Slack posts"),
    ("identities", "identity", "identities"),
    ("link_codes", "link code", "link codes"),
)


def _counted(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def check_erasable(person: Person) -> None:
    """A person merged into another is erased with them: erase the one they became."""
    if person.merged_into is not None:
        raise Conflict(
            f"{person.address} was merged into person:{person.merged_into}; erase that person "
            "(everyone merged into them is erased with them)",
            code="person_merged",
        )


def erases_every_message(members: Collection[Address], erased: Collection[str]) -> bool:
    """Whether every message of a thread goes: it is a conversation of the erased person — all
    its people are addresses of the one being erased."""
    people = [a for a in members if kind_of(a) is ParticipantKind.PERSON]
    return bool(people) and all(a in erased for a in people)
