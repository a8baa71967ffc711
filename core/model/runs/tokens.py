"""Run tokens and what a run may do: worked out from the run at every call.

A run token is opaque and random; only its SHA-256 digest is stored, and it names one run. The
token carries no rights of its own: on every tool call the run is looked up and checked *now*
(`check_may_act`), so removing the conversation's person (or the role from it, or the role from
the gateway), or deactivating the person, cuts the run off at once, mid-turn included — not when a
token expires.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Collection, Mapping

from core.model.errors import NotAllowed
from core.model.membership import ParticipantState
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.runs.run import Run

TOKEN_PREFIX = "rct_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_may_act(
    run: Run,
    states: Mapping[Address, ParticipantState],
    *,
    role_configured: bool,
    deactivated: Collection[Address] = (),
) -> None:
    """A conversation run may act while its role is configured and an active member of the
    thread, and some person of the thread is still active there and not deactivated (or merged
    into someone else): `deactivated` names the thread's people who are."""
    if not role_configured:
        raise NotAllowed(f"role {run.role!r} is not served here", code="role_not_configured")
    if states.get(run.role_address) is not ParticipantState.ACTIVE:
        raise NotAllowed(
            f"{run.role_address} is no longer active in this conversation", code="role_removed"
        )
    people = [a for a in states if kind_of(a) is ParticipantKind.PERSON]
    present = [a for a in people if states[a] is ParticipantState.ACTIVE]
    if people and all(a in deactivated for a in present):
        if present or any(a in deactivated for a in people):
            raise NotAllowed(
                "the people of this conversation are deactivated or removed from it",
                code="person_deactivated",
            )
        raise NotAllowed(
            "the people of this conversation have been removed from it", code="person_removed"
        )
