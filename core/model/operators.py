"""Operators and their tokens: who is acting when the operator API is called.

An operator token is a bearer token with a **name** (`ci`, `alice-laptop`): the name is who the
audit trail says acted (`core.model.audit`). A token is opaque and random, `rco_` and 43
URL-safe characters (256 bits), so it is recognisable in a leaked file and cannot be guessed;
only its SHA-256 digest is stored, so the database never holds a usable token. It is shown once,
when it is made.

The rules:

- A name is 1 to 64 of `a-z 0-9 . _ -`, starting with a letter or digit (`check_token_name`),
  and names one token forever: a revoked token's name is not given to another, so the audit
  trail's "who" never comes to mean two tokens.
- `default` is the token the gateway is configured with (`ROLECALL_API_TOKEN`, or the file
  `var/api-token`): it is registered under that name at start, never made through the API.
  Configuring another token replaces its digest (and undoes a revocation: whoever sets the
  gateway's settings may always act).
- A revoked token is refused from then on (`check_usable`); revoking is final.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.model.errors import Conflict, InvalidInput, NotFound
from core.model.timeline import rfc3339

TOKEN_PREFIX = "rco_"
DEFAULT_OPERATOR = "default"
"""The name of the token the gateway is configured with."""
MAX_NAME_LENGTH = 64
LAST_USED_EVERY = timedelta(minutes=1)
"""`last_used_at` is written at most this often per token: it is to the minute."""

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


def new_operator_token() -> str:
    """A new token: `rco_` and 256 random bits, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What is stored of a token: its SHA-256, in hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_token_name(raw: object) -> str:
    """A token's name, as given (names are compared exactly; no case folding)."""
    if not isinstance(raw, str) or not _NAME.fullmatch(raw) or len(raw) > MAX_NAME_LENGTH:
        shown = raw if isinstance(raw, str) else type(raw).__name__
        raise InvalidInput(
            f"a token's name must be 1 to {MAX_NAME_LENGTH} of a-z, 0-9, '.', '_' or '-', "
            f"starting with a letter or digit, not {shown!r}",
            code="invalid_token_name",
        )
    return raw


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorToken:
    """A token as it is listed: never the token itself, nor its digest."""

    name: str
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def configured(self) -> bool:
        """Whether it is the gateway's configured token (`default`)."""
        return self.name == DEFAULT_OPERATOR

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "configured": self.configured,
            "created_at": rfc3339(self.created_at),
            "last_used_at": _time(self.last_used_at),
            "revoked_at": _time(self.revoked_at),
        }


def _time(at: datetime | None) -> str | None:
    return rfc3339(at) if at is not None else None


def check_new_name(name: str, existing: OperatorToken | None) -> None:
    """A token may be made under `name` when no token ever had it (revoked ones included)."""
    if name == DEFAULT_OPERATOR:
        raise Conflict(
            f"{DEFAULT_OPERATOR!r} is the gateway's configured token (ROLECALL_API_TOKEN or "
            "var/api-token); choose another name",
            code="token_exists",
        )
    if existing is not None:
        what = "was revoked" if existing.revoked else "exists"
        raise Conflict(
            f"a token named {name!r} {what}; a name names one token forever, choose another",
            code="token_exists",
        )


def check_revocable(name: str, existing: OperatorToken | None) -> OperatorToken:
    """The token to revoke: it must exist and not be revoked already."""
    if existing is None:
        raise token_not_found(name)
    if existing.revoked_at is not None:
        raise Conflict(
            f"the token {name!r} was revoked already, at {rfc3339(existing.revoked_at)}",
            code="token_revoked",
        )
    return existing


def token_not_found(name: str) -> NotFound:
    return NotFound(f"no operator token named {name!r}", code="token_not_found")


def due_for_last_used(last_used_at: datetime | None, now: datetime) -> bool:
    """Whether a use at `now` should be written as the token's `last_used_at`."""
    return last_used_at is None or now - last_used_at >= LAST_USED_EVERY
