"""People, their channel identities, and linking identities into one person.

A **person** has a slug (their participant address is `person:<slug>`), a display name, an
optional email, and is active or not. A deactivated person's runs lose their tools at once (see
`core.model.runs.tokens`); a merged person (below) is inactive for good and names whom it became.

An **identity** is where a person is reached on one channel: `web:<site>:<user id>` (a user of a
site that embeds the widget) or `slack:<team>:<user id>`. The channel and the site or team are
lower-cased; the user id is kept exactly as the platform gave it (it may be case-sensitive, and
may hold further colons) but is 1 to 200 characters without whitespace or control characters.
Each identity belongs to at most one person. Resolving an identity gives its person, creating one
on first contact, with a slug derived from the display name (`derive_slug`; storage adds `-2`,
`-3`, … until it finds a slug no person and no thread uses: `slug_candidates`).

A **link code** joins identities: a person gets one in one channel and gives it in another. It is
8 characters of Crockford's base32 (no I, L, O or U), shown as `XXXX-XXXX`. Reading one forgives
case, spaces and hyphens, and reads O as 0 and I or L as 1. Only its SHA-256 digest is stored; it
is used once, before it expires.

**Linking** identity X to person B (redeeming B's code with X), where A is X's person now:

    X has no person           ->  X joins B
    A is B                    ->  nothing changes (the code is used up all the same)
    A keeps other identities  ->  X moves to B; A stays who they are
    X was A's last identity   ->  X moves to B and A is merged into B (A inactive, merged_into B)

A merge re-addresses A's conversations so that nothing said before the link is lost or hidden
from the person (`plan_merge`). For each thread of A, with `others` its other members:

    B is among others               ->  untouched: B is a member already and sees it
    no thread of `others + B` yet   ->  renamed: person:a becomes person:b in its participant
                                        set, its membership and its events' author/participant
    a thread of `others + B` exists ->  both kept; A's is recorded as a predecessor of B's

A rename changes who the person is called, not what was said: the events stay where they are.

**Joining by a verified email** (`email_join_target`): a channel may vouch that an identity's
email address is verified (Slack, in the workspaces the operator allows). On the identity's first
contact only, if exactly one active person has that email (compared case-insensitively), the
identity joins that person as in `X has no person` above: nothing is merged. If nobody or several
people have it, the identity gets a new person as usual. An identity that already has a person is
never moved by an email. The match trusts every email stored on people, so only vouched-for ones
may be stored: the operator's, a site's signed user's, and those a channel vouches for.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum, StrEnum
from typing import Any, Literal

from core.model.errors import Conflict, Gone, InvalidInput, NotFound, TooLarge
from core.model.participants import MAX_NAME_LENGTH, Address, ParticipantSet
from core.model.timeline import ThreadId, rfc3339

MAX_DISPLAY_NAME = 200
MAX_EMAIL = 254
MAX_USER_ID = 200
DERIVED_SLUG_LENGTH = 48
"""Derived slugs leave room for a uniqueness suffix within `MAX_NAME_LENGTH`."""

LINK_CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
LINK_CODE_LENGTH = 8
DEFAULT_LINK_TTL = timedelta(minutes=15)
MAX_LINK_TTL = timedelta(days=7)

_SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*")
_SCOPE = _SLUG
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_CODE_READS = str.maketrans({"O": "0", "I": "1", "L": "1"})


class Channel(StrEnum):
    WEB = "web"
    SLACK = "slack"


# --- persons ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Person:
    slug: str
    display_name: str
    email: str | None
    active: bool
    created_at: datetime
    merged_into: str | None = None
    erased_at: datetime | None = None
    """When the person was erased (`core.model.erasure`): inactive for good, their slug never
    anyone's again."""

    @property
    def address(self) -> Address:
        return Address(f"person:{self.slug}")

    @property
    def state(self) -> str:
        """`active`, `deactivated`, `merged` (into `merged_into`) or `erased`."""
        if self.erased_at is not None:
            return "erased"
        if self.merged_into is not None:
            return "merged"
        return "active" if self.active else "deactivated"

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "address": self.address,
            "display_name": self.display_name,
            "email": self.email,
            "active": self.active,
            "state": self.state,
            "merged_into": self.merged_into,
            "created_at": rfc3339(self.created_at),
            "erased_at": rfc3339(self.erased_at) if self.erased_at is not None else None,
        }


class _Keep(Enum):
    KEEP = "keep"


KEEP: Literal[_Keep.KEEP] = _Keep.KEEP
"""A `PersonChange` field left as it is."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PersonChange:
    display_name: str | None = None
    email: str | Literal[_Keep.KEEP] | None = KEEP
    """None clears the email."""
    active: bool | None = None


def parse_slug(raw: object) -> str:
    """A person's slug, given bare or as `person:<slug>`; trimmed and lower-cased."""
    if not isinstance(raw, str):
        raise InvalidInput("slug must be a string like 'alice'", code="invalid_slug")
    slug = raw.strip().lower().removeprefix("person:")
    if not _SLUG.fullmatch(slug) or len(slug) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"slug {raw!r} must match [a-z0-9][a-z0-9._-]* and be at most "
            f"{MAX_NAME_LENGTH} characters",
            code="invalid_slug",
        )
    return slug


def slug_of(address: Address) -> str:
    return address.removeprefix("person:")


def check_display_name(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("display_name must be a non-empty string", code="invalid_display_name")
    name = raw.strip()
    if len(name) > MAX_DISPLAY_NAME:
        raise TooLarge(
            f"display_name is {len(name)} characters; the limit is {MAX_DISPLAY_NAME}",
            code="display_name_too_long",
        )
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in name):
        raise InvalidInput(
            "display_name must not hold control characters", code="invalid_display_name"
        )
    return name


def check_email(raw: object) -> str | None:
    """An optional email address (None: none), trimmed; only its shape is checked."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not _EMAIL.fullmatch(raw.strip()):
        raise InvalidInput(f"email {raw!r} is not an email address", code="invalid_email")
    email = raw.strip()
    if len(email) > MAX_EMAIL:
        raise TooLarge(f"email is longer than {MAX_EMAIL} characters", code="email_too_long")
    return email


def derive_slug(display_name: str) -> str:
    """A slug from a display name: accents dropped, lower case, other runs of characters made
    one hyphen; `person` when nothing is left (a name in a non-Latin script)."""
    ascii_name = unicodedata.normalize("NFKD", display_name).encode("ascii", "ignore").decode()
    slug = _NOT_SLUG.sub("-", ascii_name.lower()).strip("-")
    return slug[:DERIVED_SLUG_LENGTH].rstrip("-") or "person"


def slug_candidates(base: str) -> Iterator[str]:
    """`base`, then `base-2`, `base-3`, …, each within the slug length limit."""
    yield base
    number = 2
    while True:
        suffix = f"-{number}"
        yield base[: MAX_NAME_LENGTH - len(suffix)].rstrip("-._") + suffix
        number += 1


def check_not_erased(person: Person) -> None:
    """Nothing changes an erased person again: they are a tombstone."""
    if person.erased_at is not None:
        raise Gone(f"{person.address} was erased", code="person_erased")


def check_can_link_to(person: Person) -> None:
    """Identities and link codes are only for a person who is active and not merged."""
    check_not_erased(person)
    if person.merged_into is not None:
        raise Conflict(
            f"{person.address} was merged into person:{person.merged_into}; "
            "link identities to that person instead",
            code="person_merged",
        )
    if not person.active:
        raise Conflict(
            f"{person.address} is deactivated; reactivate them first", code="person_deactivated"
        )


def check_reactivation(person: Person) -> None:
    check_not_erased(person)
    if person.merged_into is not None:
        raise Conflict(
            f"{person.address} was merged into person:{person.merged_into} and cannot be "
            "reactivated",
            code="person_merged",
        )


# --- identities ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    channel: Channel
    scope: str
    """The web site or the Slack team."""
    user: str

    def __str__(self) -> str:
        return f"{self.channel.value}:{self.scope}:{self.user}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkedIdentity:
    identity: Identity
    linked_at: datetime

    def to_json(self) -> dict[str, str]:
        return {"identity": str(self.identity), "linked_at": rfc3339(self.linked_at)}


def parse_identity(raw: object) -> Identity:
    """`web:<site>:<user id>` or `slack:<team>:<user id>`; `InvalidInput` says what is wrong."""
    if not isinstance(raw, str):
        raise InvalidInput(
            f"an identity must be a string like 'web:example.com:42', not {type(raw).__name__}",
            code="invalid_identity",
        )
    channel, _, rest = raw.strip().partition(":")
    scope, sep, user = rest.partition(":")
    known = ", ".join(f"'{c.value}:'" for c in Channel)
    if channel.lower() not in Channel.__members__.values():
        raise InvalidInput(f"identity {raw!r} must start with {known}", code="invalid_identity")
    kind = Channel(channel.lower())
    where = "site" if kind is Channel.WEB else "team"
    scope = scope.lower()
    if not sep or not _SCOPE.fullmatch(scope) or len(scope) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"identity {raw!r} must be '{kind.value}:<{where}>:<user id>', the {where} matching "
            f"[a-z0-9][a-z0-9._-]* (at most {MAX_NAME_LENGTH} characters)",
            code="invalid_identity",
        )
    if not user or len(user) > MAX_USER_ID:
        raise InvalidInput(
            f"identity {raw!r}: the user id must be 1 to {MAX_USER_ID} characters",
            code="invalid_identity",
        )
    if any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in user):
        raise InvalidInput(
            f"identity {raw!r}: the user id must not hold whitespace or control characters",
            code="invalid_identity",
        )
    return Identity(channel=kind, scope=scope, user=user)


# --- link codes ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkCode:
    """A freshly made code, shown once: only its digest is stored."""

    code: str
    person: str
    expires_at: datetime

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "person": self.person, "expires_at": rfc3339(self.expires_at)}


def new_link_code() -> str:
    """Eight random characters of the alphabet, shown as `XXXX-XXXX`."""
    chars = "".join(secrets.choice(LINK_CODE_ALPHABET) for _ in range(LINK_CODE_LENGTH))
    return f"{chars[:4]}-{chars[4:]}"


def normalize_link_code(raw: object) -> str:
    """The code as stored (before hashing): upper case, no spaces or hyphens, O as 0, I/L as 1."""
    if not isinstance(raw, str):
        raise InvalidInput("code must be a string like 'K7QM-3XPA'", code="invalid_link_code")
    code = re.sub(r"[\s-]", "", raw).upper().translate(_CODE_READS)
    if len(code) != LINK_CODE_LENGTH or any(ch not in LINK_CODE_ALPHABET for ch in code):
        raise InvalidInput(
            f"code {raw!r} is not a link code: {LINK_CODE_LENGTH} letters and digits, like "
            "'K7QM-3XPA'",
            code="invalid_link_code",
        )
    return code


def link_code_digest(raw: object) -> str:
    return hashlib.sha256(normalize_link_code(raw).encode()).hexdigest()


def check_ttl(raw: object) -> timedelta:
    """A link code's lifetime in whole seconds (None: the default, 15 minutes)."""
    if raw is None:
        return DEFAULT_LINK_TTL
    limit = int(MAX_LINK_TTL.total_seconds())
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= limit:
        raise InvalidInput(
            f"ttl_seconds must be a whole number from 1 to {limit}, not {raw!r}",
            code="invalid_ttl",
        )
    return timedelta(seconds=raw)


def check_redeemable(*, expires_at: datetime, used_at: datetime | None, now: datetime) -> None:
    """A code is good once, until it expires (an unknown code is `NotFound` too)."""
    if used_at is not None:
        raise NotFound(
            f"this link code was already used (at {rfc3339(used_at)}); ask for a new one",
            code="link_code_used",
        )
    if now >= expires_at:
        raise NotFound(
            f"this link code expired at {rfc3339(expires_at)}; ask for a new one",
            code="link_code_expired",
        )


def unknown_link_code() -> NotFound:
    return NotFound("no such link code; check it, or ask for a new one", code="link_code_unknown")


# --- linking ------------------------------------------------------------------------------------


def email_join_target(candidates: Collection[Person]) -> Person | None:
    """The person a new identity with a verified email joins: of the people who have that email,
    the one who is active (and not merged); None when none or several are (an ambiguous email
    joins no one)."""
    active = [p for p in candidates if p.active and p.merged_into is None]
    return active[0] if len(active) == 1 else None


def check_identity_movable(owner: Person, target: Person) -> None:
    """An identity of a deactivated person is not moved away from them by a link code."""
    if owner.slug != target.slug and not owner.active:
        raise Conflict(
            f"this identity belongs to {owner.address}, who is deactivated; an operator must "
            "reactivate them first",
            code="person_deactivated",
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MergePlan:
    """What a merge of one person into another does to the first one's threads."""

    renames: Mapping[ThreadId, ParticipantSet]
    """Threads to re-address, with their new participant set."""
    predecessors: Mapping[ThreadId, ThreadId]
    """An existing thread of the new set -> the merged person's thread that precedes it."""
    untouched: Collection[ThreadId]
    """Threads in which the new person is a member already."""


def readdressed(members: Collection[Address], old: Address, new: Address) -> ParticipantSet | None:
    """The thread's set with `old` replaced by `new`; None when `new` is a member already."""
    if new in members:
        return None
    return ParticipantSet.of([new, *(m for m in members if m != old)])


def plan_merge(
    old: Address,
    new: Address,
    threads: Mapping[ThreadId, Collection[Address]],
    existing: Mapping[str, ThreadId],
) -> MergePlan:
    """Decide, for each thread of `old` (its members given), whether it is renamed, kept as a
    predecessor of `new`'s thread of the same other members (`existing`: set key -> thread), or
    left alone."""
    renames: dict[ThreadId, ParticipantSet] = {}
    predecessors: dict[ThreadId, ThreadId] = {}
    untouched: list[ThreadId] = []
    for thread_id, members in threads.items():
        target = readdressed(members, old, new)
        if target is None:
            untouched.append(thread_id)
        elif (found := existing.get(target.key)) is not None and found != thread_id:
            predecessors[found] = thread_id
        else:
            renames[thread_id] = target
    return MergePlan(renames=renames, predecessors=predecessors, untouched=untouched)
