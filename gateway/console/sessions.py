"""The console's sessions: what a session is, how long it lasts, and its cookie.

- Signing in exchanges an operator token for a session. The session's id is 256 random bits,
  URL-safe; the browser keeps it in the cookie `rolecall_console` (HttpOnly: no script reads it;
  SameSite=Strict: no other site's page sends it; Path=/console: no other route of the gateway
  gets it; Secure when the gateway is reached over HTTPS). The database keeps only its SHA-256
  (`core.storage.console_store`), so a copy of the database opens no session. The operator token
  itself is never kept, never in a URL, never in a cookie: the session names the token.
- A session lasts `LIFETIME` from signing in, used or not (no setting). It ends sooner when its
  operator signs out, or when its operator token is revoked: every console request looks the
  token up by name and refuses a revoked one at once.
- Each session has a CSRF token, random too, that every change (POST) must carry — the form
  field `csrf` or the header `X-CSRF-Token` — compared in constant time (`csrf_matches`).
- `last_seen_at` is written when a use finds it older than `SEEN_EVERY`.

These are plain functions over values; `gateway.console.guard` does the I/O around them.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import timedelta

from aiohttp import web

from core.model.operators import token_digest

COOKIE = "rolecall_console"
PATH = "/console"
LIFETIME = timedelta(hours=12)
SEEN_EVERY = timedelta(minutes=1)
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"

_MICROS = 1_000_000


def micros(delta: timedelta) -> int:
    return int(delta.total_seconds() * _MICROS)


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def session_digest(session_id: str) -> str:
    """What is stored of a session id (the same digest operator tokens are kept as)."""
    return token_digest(session_id)


def is_live(expires_at: int, now: int) -> bool:
    return now < expires_at


def due_for_seen(last_seen_at: int, now: int) -> bool:
    return now - last_seen_at >= micros(SEEN_EVERY)


def csrf_matches(given: str | None, expected: str) -> bool:
    """Whether `given` is the session's CSRF token; the comparison takes the same time however
    much of it matches."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


def set_cookie(response: web.StreamResponse, session_id: str, *, secure: bool) -> None:
    """Give the browser the session's cookie."""
    response.set_cookie(
        COOKIE,
        session_id,
        path=PATH,
        httponly=True,
        samesite="Strict",
        secure=secure,
        max_age=int(LIFETIME.total_seconds()),
    )


def clear_cookie(response: web.StreamResponse, *, secure: bool) -> None:
    """Have the browser forget the session's cookie."""
    response.del_cookie(COOKIE, path=PATH, httponly=True, samesite="Strict", secure=secure)
