"""Threads, their timelines and their participants over HTTP.

    POST  /api/v1/threads                                     resolve a participant set
    GET   /api/v1/threads?participant=ADDR[&after=ID&limit=N] the threads of a participant
    GET   /api/v1/threads/{id}                                one thread
    PATCH /api/v1/threads/{id}                                change its memory policy
    POST  /api/v1/threads/{id}/messages                       post a message
    POST  /api/v1/threads/{id}/messages/{message_id}/retract  retract one's own message
    POST  /api/v1/threads/{id}/participants/{addr}            remove or re-add a member
    GET   /api/v1/threads/{id}/timeline                       read the timeline (filtered with `as`)

Each handler parses the request, makes one repository call and serializes its result; the rules
(who may post, who sees what, which moves are legal) are core's, their errors translated by the one
error middleware. Each route that changes something is audited (`gateway.api.audit`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.requests import (
    ROSTER_KEY,
    created,
    field,
    named,
    query_bool,
    query_id,
    query_int,
    read_object,
    read_query,
    repository,
)
from core.model.errors import InvalidInput
from core.model.membership import ParticipantState, parse_state
from core.model.memory_policy import MemoryPolicy
from core.model.participants import (
    Address,
    ParticipantSet,
    parse_address,
)
from core.model.serialize import event_json, thread_json
from core.model.timeline import (
    AnyEvent,
    EventId,
    ThreadId,
    check_channel,
    check_reason,
    check_text,
    parse_context,
)
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE, TimelinePage
from gateway.api.audit import audited, note

routes = web.RouteTableDef()


def _participant_list(raw: Any) -> ParticipantSet:
    if not isinstance(raw, list):
        raise InvalidInput(
            'must be a list of addresses like ["person:alice", "role:support"]',
            code="invalid_participants",
        )
    return ParticipantSet.of(raw)


def event_location(event: AnyEvent) -> str:
    """The URL that reads `event` alone: its thread's timeline, from just before it, one event,
    archived ones included (the timeline has no URL per event)."""
    return (
        f"/api/v1/threads/{event.thread_id}/timeline"
        f"?after={event.seq - 1}&limit=1&include_archived=true"
    )


def _thread_id(request: web.Request) -> ThreadId:
    return ThreadId(request.match_info["id"])


@routes.post("/api/v1/threads")
@audited("thread.resolve")
async def resolve_thread(request: web.Request) -> web.Response:
    body = await read_object(request, required=["participants"])
    participants = field(body, "participants", _participant_list)
    request.app[ROSTER_KEY].check_participants(participants)
    thread, new = await repository(request).resolve(participants)
    note(request, thread_id=thread.id, created=new)
    if new:
        return created(thread_json(thread), f"/api/v1/threads/{thread.id}")
    return web.json_response(thread_json(thread))


@routes.get("/api/v1/threads")
async def list_threads(request: web.Request) -> web.Response:
    params = read_query(request, ["participant", "after", "limit"])
    if "participant" not in params:
        raise InvalidInput(
            "missing query parameter 'participant' (an address like person:alice)",
            code="missing_parameter",
        )
    participant = named("participant", parse_address, params["participant"])
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    found = query_id(params, "after", "a thread id")
    after = ThreadId(found) if found is not None else None
    page = await repository(request).list_for(participant, after=after, limit=limit)
    return web.json_response(
        {"threads": [thread_json(thread) for thread in page.threads], "next": page.next}
    )


@routes.get("/api/v1/threads/{id}")
async def show_thread(request: web.Request) -> web.Response:
    read_query(request, [])
    thread = await repository(request).get(_thread_id(request))
    return web.json_response(thread_json(thread))


@routes.patch("/api/v1/threads/{id}")
@audited("thread.memory_policy")
async def update_thread(request: web.Request) -> web.Response:
    body = await read_object(request, required=["memory_policy"])
    policy = field(body, "memory_policy", MemoryPolicy.parse)
    before = await repository(request).get(_thread_id(request))
    thread = await repository(request).set_memory_policy(_thread_id(request), policy)
    note(
        request,
        thread_id=thread.id,
        before={"thread_only": before.memory_policy.thread_only},
        after={"thread_only": thread.memory_policy.thread_only},
    )
    return web.json_response(thread_json(thread))


@routes.post("/api/v1/threads/{id}/messages")
@audited("message.post")
async def post_message(request: web.Request) -> web.Response:
    body = await read_object(request, required=["author", "text"], optional=["context", "channel"])
    author = field(body, "author", parse_address)
    text = field(body, "text", check_text)
    context = field(body, "context", parse_context)
    channel = field(body, "channel", check_channel) if "channel" in body else "api"
    threads = repository(request)
    message = await threads.post_message(
        _thread_id(request), author, text, context, channel=channel
    )
    note(
        request, thread_id=message.thread_id, message_id=message.id, author=author, channel=channel
    )
    return created(event_json(message), event_location(message))


@routes.post("/api/v1/threads/{id}/messages/{message_id}/retract")
@audited("message.retract")
async def retract_message(request: web.Request) -> web.Response:
    body = await read_object(request, required=["author"], optional=["reason"])
    author = field(body, "author", parse_address)
    reason = field(body, "reason", check_reason)
    retraction = await repository(request).retract(
        _thread_id(request), EventId(request.match_info["message_id"]), author, reason
    )
    note(request, thread_id=retraction.thread_id, message_id=retraction.target, author=author)
    return created(event_json(retraction), event_location(retraction))


@routes.post("/api/v1/threads/{id}/participants/{addr}")
@audited("participant.remove", "participant.readd")
async def change_participant_state(request: web.Request) -> web.Response:
    participant = named("participant", parse_address, request.match_info["addr"])
    body = await read_object(request, required=["state"])
    state = field(body, "state", parse_state)
    threads = repository(request)
    change = await threads.set_participant_state(_thread_id(request), participant, state)
    removed = change.to_state is ParticipantState.REMOVED
    note(
        request,
        "participant.remove" if removed else "participant.readd",
        thread_id=change.thread_id,
        participant=participant,
        before=change.from_state.value,
        after=change.to_state.value,
    )
    return web.json_response(event_json(change))


@routes.get("/api/v1/threads/{id}/timeline")
async def read_timeline(request: web.Request) -> web.Response:
    """Forward from `after` (default: the beginning); or backward from `before`, or the newest
    page with `latest=true`. With `as`, only what that participant may see. What was said before
    the latest "start fresh" is archived: left out unless `include_archived=true`."""
    params = read_query(request, ["as", "after", "before", "latest", "limit", "include_archived"])
    viewer: Address | None = None
    if "as" in params:
        viewer = named("as", parse_address, params["as"])
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    latest = query_bool(params, "latest")
    backward = latest or "before" in params
    if backward and "after" in params:
        raise InvalidInput(
            "'after' reads forward; it cannot be combined with 'before' or 'latest=true'",
            code="conflicting_parameters",
        )
    if latest and "before" in params:
        raise InvalidInput(
            "'latest=true' reads the newest page; use 'before' alone to page back",
            code="conflicting_parameters",
        )
    archived = query_bool(params, "include_archived")
    threads, thread_id = repository(request), _thread_id(request)
    page: TimelinePage
    if backward:
        before = query_int(params, "before", default=0, low=1) if not latest else None
        page = await threads.latest(
            thread_id, viewer=viewer, before=before, limit=limit, include_archived=archived
        )
    else:
        after = query_int(params, "after", default=0, low=0)
        page = await threads.timeline(
            thread_id, viewer=viewer, after=after, limit=limit, include_archived=archived
        )
    return web.json_response(
        {"events": [event_json(e) for e in page.events], "next": page.next, "more": page.more}
    )
