"""Participant addresses and participant sets: what identifies a thread.

An address names a participant: `person:<slug>` or `role:<name>`, lower case, where a slug or name
is `[a-z0-9][a-z0-9._-]*` (at most 64 characters). Addresses are canonicalised to lower case, so
`Person:Alice` and `person:alice` are one participant.

A thread is identified by its participant set: two or more distinct addresses. The set is
canonical — order and duplicates in the input do not matter — and its `key` is a fixed-length
digest of the sorted addresses, which storage keeps unique: exactly one thread exists per set.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import NewType

from core.model.errors import InvalidInput

Address = NewType("Address", str)

MAX_NAME_LENGTH = 64
MIN_PARTICIPANTS = 2
MAX_PARTICIPANTS = 100

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


class ParticipantKind(StrEnum):
    PERSON = "person"
    ROLE = "role"


def parse_address(raw: object) -> Address:
    """Validate and canonicalise one address, or raise `InvalidInput` saying what is wrong."""
    if not isinstance(raw, str):
        raise InvalidInput(
            f"an address must be a string like 'person:alice', not {type(raw).__name__}",
            code="invalid_address",
        )
    text = raw.strip().lower()
    kind, sep, name = text.partition(":")
    if not sep or kind not in ParticipantKind.__members__.values():
        raise InvalidInput(
            f"address {raw!r} must start with 'person:' or 'role:'", code="invalid_address"
        )
    if not _NAME.fullmatch(name) or len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"address {raw!r}: the name after '{kind}:' must match [a-z0-9][a-z0-9._-]* "
            f"and be at most {MAX_NAME_LENGTH} characters",
            code="invalid_address",
        )
    return Address(f"{kind}:{name}")


def kind_of(address: Address) -> ParticipantKind:
    return ParticipantKind(address.partition(":")[0])


@dataclass(frozen=True, slots=True)
class ParticipantSet:
    """Two or more distinct addresses, sorted. Build it with `ParticipantSet.of`."""

    members: tuple[Address, ...]

    @classmethod
    def of(cls, raw: Iterable[object]) -> ParticipantSet:
        addresses = sorted({parse_address(item) for item in raw})
        if len(addresses) < MIN_PARTICIPANTS:
            raise InvalidInput(
                f"a thread needs at least {MIN_PARTICIPANTS} distinct participants, "
                f"got {len(addresses)}",
                code="too_few_participants",
            )
        if len(addresses) > MAX_PARTICIPANTS:
            raise InvalidInput(
                f"a thread has at most {MAX_PARTICIPANTS} participants, got {len(addresses)}",
                code="too_many_participants",
            )
        return cls(tuple(addresses))

    @property
    def key(self) -> str:
        """The set's identity: a SHA-256 hex digest of the sorted addresses."""
        return hashlib.sha256("\n".join(self.members).encode()).hexdigest()

    def __contains__(self, address: object) -> bool:
        return address in self.members

    def __iter__(self) -> Iterator[Address]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)
