"""The widget's tokens, all HS256 JWTs (PyJWT).

- **User tokens** are the host site's: it signs `{sub, name, email?, exp, iss?}` with its site
  secret for its signed-in user. Anything wrong with one is refused with the reason, never
  downgraded to an anonymous visit.
- **Visitor tokens** are ours, for anonymous visitors: `{typ: "visitor", site, sub}` signed with
  the gateway's widget key, kept by the browser so that a reload continues the conversation.
- **Session tokens** are ours too: what a widget presents on every call after it has started,
  naming the person, their identity, the role and the conversation, for 12 hours.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from channels.edge.errors import ApiError

ALGORITHM = "HS256"
SESSION_LIFETIME = timedelta(hours=12)
LEEWAY = timedelta(seconds=30)
"""Clock skew forgiven between the host site and the gateway."""


def _refused(code: str, message: str) -> ApiError:
    return ApiError(401, code, message, headers={"WWW-Authenticate": 'Bearer realm="widget"'})


@dataclass(frozen=True, slots=True)
class SignedUser:
    sub: str
    name: str
    email: str | None


def read_user_token(token: object, *, site: str, secret: str | None) -> SignedUser:
    """The host site's signed user, or 401 `invalid_user_token` saying what is wrong."""

    def refused(why: str) -> ApiError:
        return _refused("invalid_user_token", f"the user token is refused: {why}")

    if secret is None:
        raise refused(f"site {site!r} has no secret, so it cannot sign users in")
    if not isinstance(token, str) or not token:
        raise refused("it must be a JWT string")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            options={"require": ["exp", "sub"], "verify_aud": False},
            leeway=LEEWAY,
        )
    except jwt.ExpiredSignatureError:
        raise refused("it has expired") from None
    except jwt.InvalidSignatureError:
        raise refused(f"its signature does not match site {site!r}'s secret") from None
    except jwt.MissingRequiredClaimError as exc:
        raise refused(f"it has no {exc.claim!r} claim") from None
    except jwt.InvalidAlgorithmError:
        raise refused(f"it must be signed with {ALGORITHM}") from None
    except jwt.InvalidTokenError as exc:
        raise refused(f"it is not a valid JWT ({exc})") from None
    issuer = claims.get("iss")
    if issuer is not None and issuer != site:
        raise refused(f"it was issued for site {issuer!r}, not {site!r}")
    sub, name, email = claims.get("sub"), claims.get("name"), claims.get("email")
    if not isinstance(sub, str) or not sub.strip():
        raise refused("its 'sub' must be a non-empty string")
    if not isinstance(name, str) or not name.strip():
        raise refused("it has no 'name' claim")
    if email is not None and not isinstance(email, str):
        raise refused("its 'email' must be a string")
    return SignedUser(sub=sub, name=name.strip(), email=email)


@dataclass(frozen=True, slots=True)
class WidgetSession:
    person: str
    """The person's slug."""
    identity: str
    site: str
    role: str
    conversation: str
    expires_at: datetime


class WidgetKeys:
    """Makes and reads our own tokens with the gateway's widget key."""

    def __init__(self, key: str) -> None:
        self._key = key

    def new_visitor(self, site: str) -> tuple[str, str]:
        """A new anonymous visitor of `site`: (visitor token, visitor id)."""
        visitor = secrets.token_urlsafe(16)
        token = jwt.encode(
            {"typ": "visitor", "site": site, "sub": visitor}, self._key, algorithm=ALGORITHM
        )
        return token, visitor

    def read_visitor(self, token: object, *, site: str) -> str:
        """The visitor id of a visitor token of `site` (401 `invalid_visitor_token`)."""
        claims = self._read(token, "invalid_visitor_token", "visitor token")
        if claims.get("typ") != "visitor" or not isinstance(claims.get("sub"), str):
            raise _refused("invalid_visitor_token", "this is not a visitor token")
        if claims.get("site") != site:
            raise _refused("invalid_visitor_token", f"this visitor token is not for site {site!r}")
        visitor: str = claims["sub"]
        return visitor

    def new_session(
        self, *, person: str, identity: str, site: str, role: str, conversation: str
    ) -> tuple[str, WidgetSession]:
        expires = datetime.now(UTC).replace(microsecond=0) + SESSION_LIFETIME
        session = WidgetSession(person, identity, site, role, conversation, expires)
        claims = {
            "typ": "session",
            "sub": person,
            "idn": identity,
            "site": site,
            "role": role,
            "cnv": conversation,
            "exp": int(expires.timestamp()),
        }
        return jwt.encode(claims, self._key, algorithm=ALGORITHM), session

    def read_session(self, token: object) -> WidgetSession:
        """The session a session token names (401 `session_expired` / `invalid_session`)."""
        claims = self._read(token, "invalid_session", "session token", expired="session_expired")
        try:
            if claims["typ"] != "session":
                raise KeyError("typ")
            return WidgetSession(
                person=str(claims["sub"]),
                identity=str(claims["idn"]),
                site=str(claims["site"]),
                role=str(claims["role"]),
                conversation=str(claims["cnv"]),
                expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
            )
        except (KeyError, TypeError, ValueError):
            raise _refused("invalid_session", "this is not a session token") from None

    def _read(
        self, token: object, code: str, what: str, *, expired: str | None = None
    ) -> dict[str, Any]:
        if not isinstance(token, str) or not token:
            raise _refused(code, f"a {what} is needed")
        try:
            claims: dict[str, Any] = jwt.decode(token, self._key, algorithms=[ALGORITHM])
        except jwt.ExpiredSignatureError:
            raise _refused(expired or code, f"the {what} has expired; start a new one") from None
        except jwt.InvalidTokenError:
            raise _refused(code, f"the {what} is not one this gateway made") from None
        return claims
