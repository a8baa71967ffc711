"""Approvals over HTTP: what a role's run asks the people of its conversation, and the answer.

    GET  /api/v1/threads/{id}/approvals[?state=pending|all&as=ADDR]  a thread's approvals
    GET  /api/v1/approvals/{id}                                      one approval
    POST /api/v1/approvals/{id}                                      answer: {option, as, channel?}

An approval is the `approval_requested` event of the conversation's timeline (its id is the
approval's) and at most one `approval_resolved` event (`core.storage.approvals_store`). Agents ask
through their tools; this API reads approvals and answers them as a person would from a channel:
the first valid answer, from any channel, resolves the approval, and every later one is 409
`approval_closed`, its message saying who answered what. Who may answer, and with what, is
core's rule (`core.model.approvals.check_answer`), its errors translated by the one middleware.
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, field, named, read_object, read_query
from core.model.errors import InvalidInput, NotAllowed
from core.model.participants import Address, parse_address
from core.model.serialize import approval_json
from core.model.timeline import EventId, ThreadId, check_channel
from core.storage.approvals_store import SqlApprovalRepository
from gateway.api.audit import audited, note

routes = web.RouteTableDef()

STATES = ("pending", "all")
DEFAULT_CHANNEL = "api"
LISTED = 100
"""At most this many approvals in a thread's list (the oldest first)."""


def _approvals(request: web.Request) -> SqlApprovalRepository:
    return request.app[DATABASE_KEY].approvals


def _approval_id(request: web.Request) -> EventId:
    return EventId(request.match_info["id"])


def _state(raw: str) -> bool:
    """Whether `state` asks for the pending approvals only."""
    if raw not in STATES:
        raise InvalidInput(
            f"query parameter 'state' must be pending or all, not {raw!r}",
            code="invalid_parameter",
        )
    return raw == "pending"


def _option_id(raw: object) -> str:
    if not isinstance(raw, str) or not raw:
        raise InvalidInput("must be the id of one of the approval's options", code="invalid_option")
    return raw


@routes.get("/api/v1/threads/{id}/approvals")
async def list_approvals(request: web.Request) -> web.Response:
    """Oldest first; with `as`, only those whose request that participant may see."""
    params = read_query(request, ["state", "as"])
    pending = _state(params.get("state", "pending"))
    viewer: Address | None = None
    if "as" in params:
        viewer = named("as", parse_address, params["as"])
    found = await _approvals(request).of_thread(
        ThreadId(request.match_info["id"]), viewer=viewer, pending=pending, limit=LISTED
    )
    return web.json_response({"approvals": [approval_json(*approval) for approval in found]})


@routes.get("/api/v1/approvals/{id}")
async def show_approval(request: web.Request) -> web.Response:
    read_query(request, [])
    return web.json_response(approval_json(*await _approvals(request).get(_approval_id(request))))


@routes.post("/api/v1/approvals/{id}")
@audited("approval.answer")
async def answer_approval(request: web.Request) -> web.Response:
    body = await read_object(request, required=["option", "as"], optional=["channel"])
    option = field(body, "option", _option_id)
    answerer = field(body, "as", parse_address)
    channel = (
        DEFAULT_CHANNEL if body.get("channel") is None else field(body, "channel", check_channel)
    )
    approvals = _approvals(request)
    asked, _ = await approvals.get(_approval_id(request))
    if await request.app[DATABASE_KEY].people.inactive([answerer]):
        raise NotAllowed(f"{answerer} has been deactivated", code="person_deactivated")
    resolved = await approvals.answer(asked, answerer, option, channel=channel)
    note(
        request,
        approval_id=asked.id,
        thread_id=asked.thread_id,
        answerer=answerer,
        option=option,
        channel=channel,
    )
    return web.json_response(approval_json(asked, resolved))
