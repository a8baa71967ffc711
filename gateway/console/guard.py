"""What every console request passes: the session check, the CSRF check on changes, and the
translation of any failure into a page that says what happened in a sentence.

- `page(handler)`: a console page. Without a live session it answers with a redirect to the
  login page (`303`, the page asked for kept in `next`, why the session ended in `why`); a
  change (any method but GET) without the session's CSRF token is 403 with a page saying so;
  otherwise the handler gets a `Visit`: the session, the operator it acts as, the operator API as
  that operator (`gateway.console.api`) and the posted fields. An API refusal is shown as its
  sentence with its status, an unreachable database as a 503 sentence, anything else as a 500
  sentence naming the request id (the traceback goes to the log only).
- `data_session(request)`: the same check for what a script reads (the live stream): 401 in
  the API's JSON error shape instead of a redirect.

A session is live until its end (`gateway.console.sessions`), and only while the operator token
it names exists unrevoked: the token is looked up by name (`db.operators`, the table the edge's
check reads) on every request, not cached, so revoking a token ends its console sessions at the
next request on every replica. An ended session's row is deleted when it is found.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from aiohttp_sse import EventSourceResponse

from channels.edge.errors import ApiError
from channels.edge.requests import DATABASE_KEY, Proxies, client_address
from core.storage.console_store import ConsoleSession
from core.storage.errors import StorageUnavailable
from core.storage.rows import to_micros
from gateway.console.api import ApiRefused, ConsoleApi
from gateway.console.limits import LoginRate
from gateway.console.render import harden, render
from gateway.console.sessions import (
    COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    csrf_matches,
    due_for_seen,
    is_live,
    session_digest,
)
from gateway.logs import current_request_id
from gateway.operators import Operator

log = logging.getLogger("rolecall.console")

TITLES = {403: "Not allowed", 404: "Not found", 409: "Conflict", 410: "Gone", 422: "Not accepted"}
"""The heading of a page showing an API refusal, by its status."""
LOGIN = "/console/login"
HOME = "/console"


@dataclass(slots=True, kw_only=True)
class Console:
    """What the console keeps on the application."""

    rate: LoginRate
    trusted_proxies: Proxies
    secure_cookie: bool
    streams: set[EventSourceResponse] = field(default_factory=set)


CONSOLE_KEY = web.AppKey("console", Console)


class Ended(Enum):
    """Why a request has no live session (the login page says so)."""

    NONE = ""
    EXPIRED = "expired"
    REVOKED = "revoked"


@dataclass(frozen=True, slots=True, kw_only=True)
class Visit:
    """A request of a signed-in operator."""

    session: ConsoleSession
    operator: Operator
    api: ConsoleApi
    form: Mapping[str, str]

    def context(self, here: str) -> dict[str, Any]:
        """What the base layout needs: the page's place in the navigation, who is signed in,
        and the token its forms carry."""
        return {"here": here, "operator": self.operator.name, "csrf": self.session.csrf}


PageHandler = Callable[[web.Request, Visit], Awaitable[web.StreamResponse]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def now_micros() -> int:
    return to_micros(datetime.now(UTC))


def client_of(request: web.Request) -> str:
    return client_address(request, request.app[CONSOLE_KEY].trusted_proxies)


async def signed_in(request: web.Request) -> ConsoleSession | Ended:
    """The request's live session, or why it has none."""
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        return Ended.NONE
    database = request.app[DATABASE_KEY]
    digest = session_digest(cookie)
    session = await database.console.get(digest)
    now = now_micros()
    if session is None:
        return Ended.EXPIRED
    if not is_live(session.expires_at, now):
        await database.console.close(digest)
        return Ended.EXPIRED
    token = await database.operators.get(session.operator)
    if token is None or token.revoked:
        await database.console.close(digest)
        return Ended.REVOKED
    if due_for_seen(session.last_seen_at, now):
        await database.console.see(digest, now)
    return session


def to_login(why: Ended, next_page: str | None = None) -> web.Response:
    query = {"why": why.value} if why is not Ended.NONE else {}
    if next_page and next_page != HOME:
        query["next"] = next_page
    location = LOGIN + ("?" + urlencode(query) if query else "")
    response = web.Response(status=303, headers={"Location": location})
    harden(response)
    return response


def problem(
    status: int,
    title: str,
    sentence: str,
    visit: Visit | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """A page that says what went wrong in a sentence."""
    context: dict[str, Any] = (
        visit.context("") if visit else {"here": "", "operator": None, "csrf": None}
    )
    response = render("problem.html", status=status, title=title, sentence=sentence, **context)
    response.headers.update(headers or {})
    return response


def page(handler: PageHandler) -> Handler:
    """The console page `handler`, behind the session and CSRF checks (see the module)."""

    @functools.wraps(handler)
    async def guarded(request: web.Request) -> web.StreamResponse:
        base = request.clone()  # the API's requests are copies of this one, made before reading
        visit: Visit | None = None

        async def answer() -> web.StreamResponse:
            nonlocal visit
            found = await signed_in(request)
            if not isinstance(found, ConsoleSession):
                return to_login(found, request.path_qs if request.method == "GET" else None)
            form: dict[str, str] = {}
            if request.method != "GET":
                posted = await request.post()
                form = {name: value for name, value in posted.items() if isinstance(value, str)}
            operator = Operator(name=found.operator, client=client_of(request))
            visit = Visit(
                session=found, operator=operator, api=ConsoleApi(base, operator), form=form
            )
            given = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
            if request.method != "GET" and not csrf_matches(given, found.csrf):
                return problem(
                    403,
                    "Refused",
                    "This change was refused because it did not carry this session's security "
                    "token: reload the page and try again from the console.",
                    visit,
                )
            return harden(await handler(request, visit))

        return await as_page(request, answer, lambda: visit)

    return guarded


def open_page(handler: Handler) -> Handler:
    """A console page anyone may ask for (the login form), its failures shown as pages too."""

    @functools.wraps(handler)
    async def shown(request: web.Request) -> web.StreamResponse:
        return await as_page(request, lambda: handler(request), lambda: None)

    return shown


async def as_page(
    request: web.Request,
    answer: Callable[[], Awaitable[web.StreamResponse]],
    visit: Callable[[], Visit | None],
) -> web.StreamResponse:
    """`answer()`, or a page saying in a sentence why there is none: an API refusal with its
    status, an unreachable database 503, anything else 500 (the traceback to the log only)."""
    try:
        return await answer()
    except ApiRefused as refused:
        title = TITLES.get(refused.status, "Not possible")
        return problem(refused.status, title, as_sentence(refused.message), visit())
    except StorageUnavailable:
        return problem(
            503,
            "Database unavailable",
            "The gateway cannot reach its database just now; try again in a few seconds.",
            visit(),
            headers={"Retry-After": "5"},
        )
    except web.HTTPException:
        raise
    except Exception:
        log.exception("console page %s failed", request.path)
        return problem(
            500,
            "Something went wrong",
            "The gateway could not show this page; its log has the details under request "
            f"id {current_request_id.get()}.",
            visit(),
        )


async def data_session(request: web.Request) -> ConsoleSession:
    """The request's live session; 401 (the API's JSON error) without one."""
    found = await signed_in(request)
    if isinstance(found, ConsoleSession):
        return found
    raise ApiError(
        401,
        "console_session_required",
        "this needs a signed-in console session: sign in at /console/login",
    )


def as_sentence(message: str) -> str:
    """An API message as a sentence: capitalised, with its full stop."""
    text = message.strip() or "the gateway refused this"
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
