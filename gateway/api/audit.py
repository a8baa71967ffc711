"""The audit trail over HTTP: how an operator route records what it did, and how it is read.

    GET /api/v1/audit[?after=N | before=N | latest=true][&limit=N&actor=NAME&action=NAME]

**Recording.** Every operator route that changes something is declared `@audited(action, …)`
with the actions it may record (`core.model.audit.ACTIONS`). After its handler answered with
success (2xx), one record is written: the operator token's name and the client's address, as the
edge found them (`gateway.operators`), the action, the request's id, and the detail the handler
noted with `note(request, …)` — the ids of what it acted on, and before and after where it knew
them. A handler that may record several actions names the one it did (`note(request,
action=…)`). A request refused or failed (any error: 4xx, 5xx) records nothing, since it changed
nothing. The record is written after the action's own commit: should the database fail between
the two, the request fails (503) though the action was done, and the trail lacks it — the one way
an action can be missing.

**Reading.** Forward from `after` (default: the first record), oldest first; or backward:
`before` a position, or the newest page with `latest=true`, still oldest first within the page.
`actor` and `action` keep only that token's, or that action's, records. There is no route that
writes, changes or deletes a record: only housekeeping deletes them, past
`ROLECALL_AUDIT_RETENTION` (`gateway.housekeeping`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, named, query_bool, query_int, read_query
from core.model.audit import Action, check_action
from core.model.errors import InvalidInput
from core.model.operators import check_token_name
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.logs import current_request_id
from gateway.operators import OPERATOR_KEY

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

AUDITED = "audit_actions"
"""The attribute of an audited handler naming the actions it may record (a frozenset)."""


@dataclass(slots=True)
class _Noted:
    action: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


_NOTED = web.RequestKey("audit_noted", _Noted)


def note(request: web.Request, action: str | None = None, /, **detail: Any) -> None:
    """Say what the handler did, for its audit record: which of its actions (when it may record
    several) and the detail (merged into what was noted before)."""
    noted = request.get(_NOTED)
    if noted is None:
        noted = request[_NOTED] = _Noted()
    if action is not None:
        noted.action = action
    noted.detail.update(detail)


def audited(*actions: str) -> Callable[[Handler], Handler]:
    """Record one of `actions` (the first, when the handler does not say) for every successful
    request of the decorated operator route."""
    declared = frozenset(check_action(action) for action in actions)
    if not declared:
        raise ValueError("an audited route records at least one action")

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def recorded(request: web.Request) -> web.StreamResponse:
            response = await handler(request)
            if response.status < 400:
                await _record(request, actions[0], declared)
            return response

        setattr(recorded, AUDITED, declared)
        return recorded

    return decorate


def actions_of(handler: object) -> frozenset[str]:
    """The actions a route handler records (none: it is not audited)."""
    found: object = getattr(handler, AUDITED, None)
    return found if isinstance(found, frozenset) else frozenset()


async def _record(request: web.Request, default: str, declared: frozenset[str]) -> None:
    noted = request.get(_NOTED) or _Noted()
    action = noted.action or default
    if action not in declared:  # a handler noting what it was not declared with: a bug
        raise RuntimeError(f"{request.path} noted {action!r}, not one of {sorted(declared)}")
    operator = request[OPERATOR_KEY]
    await request.app[DATABASE_KEY].audit.record(
        Action(
            actor=operator.name,
            client=operator.client,
            action=action,
            detail=noted.detail,
            request_id=current_request_id.get(),
        )
    )


# --- reading --------------------------------------------------------------------------------------

routes = web.RouteTableDef()


def _filters(params: Mapping[str, str]) -> tuple[str | None, str | None]:
    actor = named("actor", check_token_name, params["actor"]) if "actor" in params else None
    action = named("action", check_action, params["action"]) if "action" in params else None
    return actor, action


@routes.get("/api/v1/audit")
async def read_audit(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "before", "latest", "limit", "actor", "action"])
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    latest = query_bool(params, "latest")
    if "after" in params and (latest or "before" in params):
        raise InvalidInput(
            "'after' reads forward; it cannot be combined with 'before' or 'latest=true'",
            code="conflicting_parameters",
        )
    if latest and "before" in params:
        raise InvalidInput(
            "'latest=true' reads the newest page; use 'before' alone to page back",
            code="conflicting_parameters",
        )
    actor, action = _filters(params)
    trail = request.app[DATABASE_KEY].audit
    if latest or "before" in params:
        before = query_int(params, "before", default=0, low=1) if not latest else None
        page = await trail.page(before=before, newest=True, limit=limit, actor=actor, action=action)
    else:
        after = query_int(params, "after", default=0, low=0)
        page = await trail.page(after=after, limit=limit, actor=actor, action=action)
    return web.json_response(
        {"records": [r.to_json() for r in page.records], "next": page.next, "more": page.more}
    )
