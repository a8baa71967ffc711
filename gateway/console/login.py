"""Signing in to the console and out of it.

    GET  /console/login    the form: paste an operator token
    POST /console/login    token=…: a session and its cookie, then the page asked for
    POST /console/logout   csrf=…: the session ends, the cookie goes

Signing in checks the token exactly as the operator API does (`OperatorTokens.identify`: the same
lookup by digest, the same cache, the same refusals: unknown, revoked), after the client's
address has a try left (`gateway.console.limits`: 429 with `Retry-After` otherwise). The form is
posted, never put in the URL; a post that the browser says came from another site
(`Sec-Fetch-Site: cross-site`) is refused, so no other site can sign a browser in. The page to go
back to (`next`) is only ever a console path.

Signing in and out are operator actions, so each leaves a record in the audit trail
(`console.sign_in`, `console.sign_out`) under the token's name, from the browser's address,
naming the session by the first characters of its id's digest (what the sessions' table keys it
by), so that a sign-out is matched to its sign-in. A refused sign-in changes nothing and leaves
none (the rate limit and the log see it).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from channels.edge.errors import ApiError
from channels.edge.requests import DATABASE_KEY
from core.model.audit import Action
from core.storage.console_store import ConsoleSession
from gateway.console.guard import (
    CONSOLE_KEY,
    HOME,
    LOGIN,
    Ended,
    Visit,
    as_sentence,
    client_of,
    open_page,
    page,
    problem,
    signed_in,
)
from gateway.console.render import harden, render
from gateway.console.sessions import (
    COOKIE,
    LIFETIME,
    clear_cookie,
    micros,
    new_csrf_token,
    new_session_id,
    session_digest,
    set_cookie,
)
from gateway.logs import current_request_id
from gateway.operators import OPERATORS_KEY

WHY = {
    Ended.EXPIRED.value: "Your console session has ended. Sign in again to go on.",
    Ended.REVOKED.value: "The operator token of your session was revoked, which ended the "
    "session. Sign in with another token.",
    "signed_out": "You are signed out.",
}
REFUSED = (
    "That is not an operator token this gateway accepts. Paste the whole token: the one in "
    "var/api-token, or one made with `rolecall token create NAME`."
)


def _next_page(raw: str | None) -> str:
    """Where to go after signing in: a console path, else the overview."""
    if not raw:
        return HOME
    parts = urlsplit(raw)
    inside = parts.path == HOME or parts.path.startswith(HOME + "/")
    if parts.scheme or parts.netloc or not inside or raw.startswith("//"):
        return HOME
    return raw


def _form(
    next_page: str, *, status: int = 200, notice: str | None = None, error: str | None = None
) -> web.Response:
    return render(
        "login.html",
        status=status,
        here="login",
        operator=None,
        csrf=None,
        next_page=next_page,
        notice=notice,
        error=error,
    )


@open_page
async def login_page(request: web.Request) -> web.StreamResponse:
    next_page = _next_page(request.query.get("next"))
    if isinstance(await signed_in(request), ConsoleSession):
        raise web.HTTPSeeOther(next_page, headers={"Cache-Control": "no-store"})
    return _form(next_page, notice=WHY.get(request.query.get("why", "")))


@open_page
async def sign_in(request: web.Request) -> web.StreamResponse:
    console = request.app[CONSOLE_KEY]
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return problem(403, "Refused", "Sign in from the console's own login page.")
    client = client_of(request)
    wait = await console.rate.take(client)
    if wait > 0:
        seconds = console.rate.retry_after(wait)
        return problem(
            429,
            "Too many tries",
            f"Too many sign-in attempts from your address; try again in {seconds} seconds.",
            headers={"Retry-After": str(seconds)},
        )
    posted = await request.post()
    token = posted.get("token")
    next_raw = posted.get("next")
    next_page = _next_page(next_raw if isinstance(next_raw, str) else None)
    try:
        name = await request.app[OPERATORS_KEY].identify(
            token.strip() if isinstance(token, str) else None
        )
    except ApiError as refused:
        sentence = REFUSED if refused.code == "unauthorized" else as_sentence(refused.message)
        return _form(next_page, status=401, error=sentence)
    database = request.app[DATABASE_KEY]
    old = request.cookies.get(COOKIE)
    if old:
        await database.console.close(session_digest(old))
    session_id = new_session_id()
    await database.console.open(
        digest=session_digest(session_id),
        operator=name,
        csrf=new_csrf_token(),
        client=client,
        lifetime=micros(LIFETIME),
    )
    await _record(request, "console.sign_in", name, client, session_digest(session_id))
    response = web.Response(status=303, headers={"Location": next_page})
    set_cookie(response, session_id, secure=console.secure_cookie)
    return harden(response)


@page
async def sign_out(request: web.Request, visit: Visit) -> web.StreamResponse:
    await request.app[DATABASE_KEY].console.close(visit.session.digest)
    operator = visit.operator
    await _record(request, "console.sign_out", operator.name, operator.client, visit.session.digest)
    response = web.Response(status=303, headers={"Location": f"{LOGIN}?why=signed_out"})
    clear_cookie(response, secure=request.app[CONSOLE_KEY].secure_cookie)
    return response


SESSION_NAMED_BY = 12
"""Hex characters of a session's digest the audit trail names it by."""


async def _record(request: web.Request, action: str, actor: str, client: str, digest: str) -> None:
    record = Action(
        actor=actor,
        client=client,
        action=action,
        detail={"session": digest[:SESSION_NAMED_BY]},
        request_id=current_request_id.get(),
    )
    await request.app[DATABASE_KEY].audit.record(record)
