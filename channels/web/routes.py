"""The widget's HTTP surface (docs/widget.md): `/widget.js`, the demo page `/`, `/widget/v1/…`.

Who is talking is settled once, when the widget starts a session (`POST /widget/v1/sessions`):
the host site's signed user, or an anonymous visitor with our visitor token. Every later call
presents the session token we gave back. A person's message is committed before the answer
goes back; the run host takes it from there like any other message.

Approvals: the person answers one of their conversation's approvals here (`POST
/widget/v1/approvals/{id}`), as the session's current person, from the channel `web`. An approval
is only ever found in the session's conversation, and only when the person sees it there: any
other id is the same 404, so that an id reveals nothing. History shows each request with its
state as the person sees it (a resolution they do not see leaves it pending for them).

Erasure (`core.model.erasure`): the session of a person who was erased is over — every call
answers 401 `session_expired`, its message `ERASED_MESSAGE` — and a stream open on their
conversation sends the `erased` event and ends. Their identity is gone with them, so a new
session for the same visitor (or signed-in user) is a new person, in a new conversation.

Traced (`core.tracing`), each frame a live stream sends of an event this process committed is a
`rolecall.widget.stream` span in the trace of that commit (history a stream catches up on is not).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from aiohttp import web
from aiohttp_sse import EventSourceResponse

from channels.edge.errors import ApiError
from channels.edge.requests import (
    DATABASE_KEY,
    HOST_KEY,
    ROLES_KEY,
    Proxies,
    client_address,
    created,
    query_bool,
    query_int,
    read_object,
    read_query,
)
from channels.web.asset import (
    LONG_CACHE,
    REVALIDATE,
    STATIC,
    WidgetScript,
    accepts_gzip,
    load_widget_script,
    widget_src,
)
from channels.web.limits import PostingRate
from channels.web.present import (
    Frames,
    Names,
    too_late,
    widget_event,
    widget_role,
    working_frame,
)
from channels.web.sites import RefusedOrigins, Site, Sites, check_origin
from channels.web.stream import (
    Closed,
    Fanout,
    Overflowed,
    Subscription,
    ViewerState,
    Working,
)
from channels.web.tokens import WidgetKeys, WidgetSession, read_user_token
from core import tracing
from core.engine.host.host import RunHost
from core.model.approvals import ApprovalClosed
from core.model.errors import Gone, InvalidInput, NotAllowed, NotFound, TooLarge
from core.model.participants import Address, ParticipantSet
from core.model.people import Identity, Person, parse_identity
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    EventId,
    ThreadId,
    check_text,
    rfc3339,
)
from core.storage.database import Database

log = logging.getLogger("rolecall.web")

PREFIX = "/widget/v1"
MAX_WIDGET_TEXT = 4_000
LINK_CODE_TTL = timedelta(minutes=15)
PING_SECONDS = 15.0
RECONNECT_MS = 1_000
CATCH_UP_PAGE = 200
HISTORY_PAGE = 30
ERASED_MESSAGE = "this conversation was erased; a new session starts a new one"
"""The message of the 401 `session_expired` a session of an erased person answers (the widget
tells it from other expiries by its first words, `this conversation was erased`)."""


@dataclass
class WebChannel:
    sites: Sites
    keys: WidgetKeys
    rate: PostingRate
    names: Names
    base_url: str
    trusted_proxies: Proxies = ()
    fanout: Fanout = field(default_factory=Fanout)
    frames: Frames = field(default_factory=Frames)
    streams: set[EventSourceResponse] = field(default_factory=set)
    refused: RefusedOrigins = field(default_factory=RefusedOrigins)


WEB_KEY = web.AppKey("web_channel", WebChannel)
SCRIPT_KEY = web.AppKey("widget_script", WidgetScript)
"""`widget.js`, read and compressed when the routes are added."""
REFUSED_ORIGIN = web.RequestKey("widget_refused_origin", str)
"""The page origin this request was refused for (its answer carries CORS headers all the same)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WidgetConfig:
    """What the widget takes from the gateway's settings (the gateway builds it)."""

    sites: Iterable[Site]
    """The sites that embed the widget; `default` is added when not configured, and the
    gateway's own origin is allowed for every site (the demo page)."""
    key: Callable[[], str]
    """The key that signs widget sessions and visitor tokens, asked for once at start."""
    post_rate: float
    """Messages per minute one widget session may post."""
    shared_rate: bool = False
    """Count posts in the database, for every replica serving it (PostgreSQL)."""
    trusted_proxies: Proxies = ()
    """Whose `X-Forwarded-For` names the visitor (the limit on new visitors per address)."""
    base_url: str


def open_streams(app: web.Application) -> int:
    """How many widget streams are open now (0 before the channel starts)."""
    channel = app.get(WEB_KEY)
    return channel.fanout.open_streams if channel is not None else 0


def add_routes(app: web.Application, config: WidgetConfig) -> None:
    """Mount the widget on the application; call after the database and host lifecycles."""
    app[SCRIPT_KEY] = load_widget_script()
    app.cleanup_ctx.append(lambda app: _lifecycle(app, config))
    app.on_shutdown.append(_close_streams)
    app.on_response_prepare.append(_cors)
    app.router.add_get("/", demo_page)
    app.router.add_get("/widget.js", widget_script)
    app.router.add_route("OPTIONS", PREFIX + "/{tail:.*}", preflight)
    app.router.add_post(PREFIX + "/sessions", start_session)
    app.router.add_get(PREFIX + "/history", history)
    app.router.add_post(PREFIX + "/messages", post_message)
    app.router.add_post(PREFIX + "/approvals/{id}", answer_approval)
    app.router.add_get(PREFIX + "/stream", stream)
    app.router.add_post(PREFIX + "/fresh", start_fresh)
    app.router.add_post(PREFIX + "/link-codes", new_link_code)
    app.router.add_post(PREFIX + "/link", redeem_link_code)


async def _lifecycle(app: web.Application, config: WidgetConfig) -> AsyncIterator[None]:
    database = app[DATABASE_KEY]
    channel = WebChannel(
        sites=Sites(config.sites, own_origin=config.base_url),
        keys=WidgetKeys(config.key()),
        rate=PostingRate.shared(database, config.post_rate)
        if config.shared_rate
        else PostingRate(config.post_rate),
        names=Names(database, app[ROLES_KEY]),
        base_url=config.base_url,
        trusted_proxies=config.trusted_proxies,
    )
    app[WEB_KEY] = channel
    stop_commits = database.listen(channel.fanout.on_commit)
    stop_erasures = database.listen(lambda events, _: _forget_erased(channel, events))
    host: RunHost = app[HOST_KEY]
    stop_activity = host.watch_activity(channel.fanout.on_activity)
    try:
        yield
    finally:
        stop_commits()
        stop_erasures()
        stop_activity()


def _forget_erased(channel: WebChannel, events: Iterable[AnyEvent]) -> None:
    """Keep nothing of an erased person: their name, and the frames rendered of what they said
    (a frame of a tombstone is another one)."""
    for event in events:
        if isinstance(event, Erased):
            channel.names.forget(event.participant)
            channel.frames.clear()


async def _close_streams(app: web.Application) -> None:
    """Open streams end when the gateway stops; browsers reconnect with `Last-Event-ID`."""
    if WEB_KEY in app:
        for response in list(app[WEB_KEY].streams):
            with contextlib.suppress(RuntimeError):
                response.stop_streaming()


# --- CORS and origins ---------------------------------------------------------------------------


async def _cors(request: web.Request, response: web.StreamResponse) -> None:
    """Answers under `/widget/v1` (errors included) carry CORS headers for allowed origins; for
    an origin no site allows, only the preflight and the refusal do: the page's script reads
    why it was refused, and nothing else."""
    if not request.path.startswith(PREFIX + "/") or WEB_KEY not in request.app:
        return
    origin = request.headers.get("Origin")
    if not origin:
        return
    answered = request.method == "OPTIONS" or request.get(REFUSED_ORIGIN) == origin
    if answered or request.app[WEB_KEY].sites.allows_somewhere(origin):
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Expose-Headers"] = "Retry-After"
        response.headers.add("Vary", "Origin")


async def preflight(request: web.Request) -> web.Response:
    """Any page origin may ask: the request itself is refused when its site does not allow the
    origin (403 `origin_not_allowed`, readable by the page), where a refused preflight would
    only tell the page's script that the chat cannot be reached."""
    # No query check: a preflight carries the query of the request it asks about.
    if not request.headers.get("Origin"):
        raise ApiError(403, "origin_not_allowed", "a preflight names the page's Origin")
    return web.Response(
        status=204,
        headers={
            "Access-Control-Allow-Methods": "GET, POST",
            "Access-Control-Allow-Headers": "Authorization, Content-Type, Last-Event-ID",
            "Access-Control-Max-Age": "600",
        },
    )


# --- the script and the demo page ---------------------------------------------------------------


async def widget_script(request: web.Request) -> web.Response:
    """The script, compressed when the browser takes gzip; cached for a year under the running
    script's versioned URL, revalidated (`ETag`) under any other (`channels.web.asset`)."""
    params = read_query(request, ["v"])
    script = request.app[SCRIPT_KEY]
    compressed = accepts_gzip(request.headers.get("Accept-Encoding", ""))
    pinned = params.get("v") == script.version
    headers = {
        "Cache-Control": LONG_CACHE if pinned else REVALIDATE,
        "ETag": script.etag(compressed=compressed),
        "Vary": "Accept-Encoding",
        "Access-Control-Allow-Origin": "*",
        "X-Content-Type-Options": "nosniff",
    }
    if script.matches(request.headers.get("If-None-Match")):
        return web.Response(status=304, headers=headers)
    if compressed:
        headers["Content-Encoding"] = "gzip"
    return web.Response(
        body=script.compressed if compressed else script.plain,
        headers={**headers, "Content-Type": "application/javascript; charset=utf-8"},
    )


async def demo_page(request: web.Request) -> web.Response:
    read_query(request, [])
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    base_url = request.app[WEB_KEY].base_url
    page = page.replace("{{WIDGET_SRC}}", f"{base_url}/widget.js")  # what a site pastes
    page = page.replace("{{WIDGET_PATH}}", widget_src(""))
    return web.Response(text=page, content_type="text/html", charset="utf-8")


# --- sessions -----------------------------------------------------------------------------------


async def start_session(request: web.Request) -> web.Response:
    body = await read_object(
        request, required=["role"], optional=["site", "user_token", "visitor_token"]
    )
    channel = request.app[WEB_KEY]
    site = channel.sites.get(body.get("site"))
    _check_origin(request, site)
    role = request.app[ROLES_KEY].get(body["role"]) if isinstance(body["role"], str) else None
    if role is None:
        raise ApiError(404, "unknown_role", f"no role named {body['role']!r} is served here")
    database = request.app[DATABASE_KEY]
    visitor_token: str | None = None
    if body.get("user_token") is not None:
        user = read_user_token(body["user_token"], site=site.name, secret=site.secret)
        identity = _identity(site, user.sub)
        person = await database.people.resolve(identity, display_name=user.name, email=user.email)
        if body.get("visitor_token") is not None:  # a visitor who signs in keeps what they said
            visitor_id = channel.keys.read_visitor(body["visitor_token"], site=site.name)
            visitor = _identity(site, "visitor:" + visitor_id)
            person = await _link_visitor(database, visitor, person.slug)
    else:
        if body.get("visitor_token") is not None:
            visitor_token = body["visitor_token"]
            visitor_id = channel.keys.read_visitor(visitor_token, site=site.name)
        else:  # a new visitor is a new person: as limited, per address, as posting is
            who = f"new-visitor:{client_address(request, channel.trusted_proxies)}"
            await _limit(channel, who, "new visitors from this address")
            visitor_token, visitor_id = channel.keys.new_visitor(site.name)
        identity = _identity(site, "visitor:" + visitor_id)
        person = await database.people.resolve(identity, display_name="Visitor")
    if not person.active:
        raise NotAllowed("this person has been deactivated", code="person_deactivated")
    members = ParticipantSet.of([person.address, f"role:{role.name}"])
    thread, _ = await database.threads.resolve(members)
    token, session = channel.keys.new_session(
        person=person.slug,
        identity=str(identity),
        site=site.name,
        role=role.name,
        conversation=thread.id,
    )
    latest = await database.threads.latest(thread.id, viewer=person.address, limit=1)
    answer: dict[str, Any] = {
        "session_token": token,
        "expires_at": rfc3339(session.expires_at),
        "person": {"slug": person.slug, "display_name": person.display_name},
        "role": widget_role(role),
        "conversation": thread.id,
        "last_seq": latest.events[-1].seq if latest.events else 0,
    }
    if visitor_token is not None:
        answer["visitor_token"] = visitor_token
    return web.json_response(answer)


def _identity(site: Site, user: str) -> Identity:
    return parse_identity(f"web:{site.name}:{user}")


async def _link_visitor(database: Database, visitor: Identity, slug: str) -> Person:
    """Move the visitor identity to the signed-in person (merging the visitor's conversations
    into theirs, `core.model.people`), unless it is theirs already."""
    owner = await database.people.of_identity(visitor)
    if owner is None or owner.slug == slug:
        return await database.people.get(slug)
    code = await database.people.new_link_code(slug, timedelta(minutes=1))
    return await database.people.redeem(code.code, visitor)


async def _session(request: web.Request, *, token: str | None = None) -> WidgetSession:
    """The widget session the request presents, from a page its site allows."""
    channel = request.app[WEB_KEY]
    if token is None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            token = ""
    session = channel.keys.read_session(token.strip())
    _check_origin(request, channel.sites.get(session.site))
    return session


def _check_origin(request: web.Request, site: Site) -> None:
    """`check_origin`, noting a refusal: the operator hears of it once, the page can read it."""
    origin = request.headers.get("Origin")
    try:
        check_origin(origin, site)
    except ApiError:
        if origin is not None:  # always so: only an Origin is refused
            request[REFUSED_ORIGIN] = origin
            request.app[WEB_KEY].refused.note(origin, site)
        raise


async def _not_erased(request: web.Request, session: WidgetSession) -> Person:
    """The session's person, unless they were erased: their session is over (401)."""
    try:
        person = await request.app[DATABASE_KEY].people.get(session.person)
    except Gone:
        raise ApiError(401, "session_expired", ERASED_MESSAGE) from None
    if person.erased_at is not None:
        raise ApiError(401, "session_expired", ERASED_MESSAGE)
    return person


async def _current_person(request: web.Request, session: WidgetSession) -> Address:
    """The session's person, if they may still speak: a deactivated person may not; one merged
    into another since the session began must start a new session (as the other), and so must
    one erased (as someone new)."""
    person = await _not_erased(request, session)
    if person.merged_into is not None:
        raise ApiError(401, "session_expired", "this person was linked to another: start again")
    if not person.active:
        raise NotAllowed("this person has been deactivated", code="person_deactivated")
    return person.address


# --- the conversation ---------------------------------------------------------------------------


async def history(request: web.Request) -> web.Response:
    """A page of the conversation, newest first. At its beginning, `predecessor` names the
    conversation before it: one this person had under an identity since linked to them, kept
    beside this one by the merge (`core.model.people`); it pages on with `conversation=`."""
    session = await _session(request)
    params = read_query(request, ["before", "limit", "archived", "conversation"])
    await _not_erased(request, session)
    before = query_int(params, "before", default=0, low=1) or None
    limit = query_int(params, "limit", default=HISTORY_PAGE, low=1, high=100)
    archived = query_bool(params, "archived")
    channel = request.app[WEB_KEY]
    database = request.app[DATABASE_KEY]
    threads = database.threads
    viewer = Address(f"person:{session.person}")
    thread_id = ThreadId(session.conversation)
    older = await _older_conversations(database, thread_id)
    if "conversation" in params and params["conversation"] != thread_id:
        thread_id = ThreadId(params["conversation"])
        if thread_id not in older:
            raise ApiError(
                404, "unknown_conversation", "no earlier conversation of yours by that id"
            )
        viewer = await _former_self(database, thread_id, session.person)
        archived = True  # an earlier conversation is all archive
    page = await threads.latest(
        thread_id, viewer=viewer, before=before, limit=limit, include_archived=archived
    )
    resolved = await _resolutions(database, thread_id, viewer, page.events)
    events = [
        shown
        for event in page.events
        if (
            shown := await widget_event(
                event, viewer=viewer, names=channel.names, resolution=resolved.get(event.id)
            )
        )
        is not None
    ]
    more = page.next is not None and bool(page.events)
    predecessor = None
    if not more:
        after_this = older[older.index(thread_id) + 1 :] if thread_id in older else older
        predecessor = after_this[0] if after_this else None
    earlier = predecessor is not None
    if not archived and not more and not earlier:
        first = page.events[0].seq if page.events else before
        archive = await threads.latest(
            thread_id, viewer=viewer, before=first, limit=1, include_archived=True
        )
        earlier = bool(archive.events)
    answer = {"events": events, "more": more, "earlier": earlier, "predecessor": predecessor}
    return web.json_response(answer)


OLDER_LIMIT = 20


async def _older_conversations(database: Database, thread_id: ThreadId) -> list[ThreadId]:
    """The conversations that precede this one (and theirs, and so on), newest first."""
    found: list[ThreadId] = []
    frontier = [thread_id]
    while frontier and len(found) < OLDER_LIMIT:
        for earlier in await database.people.predecessors(frontier.pop()):
            if earlier not in found and earlier != thread_id:
                found.append(earlier)
                frontier.append(earlier)
    return sorted(found, reverse=True)[:OLDER_LIMIT]  # ids are time-ordered (UUIDv7)


async def _former_self(database: Database, thread_id: ThreadId, person: str) -> Address:
    """Who this person was in an earlier conversation: its person merged into them."""
    thread = await database.threads.get(thread_id)
    for address in thread.addresses:
        kind, _, slug = address.partition(":")
        if kind != "person":
            continue
        if slug == person or (await database.people.get(slug)).merged_into == person:
            return address
    raise ApiError(404, "unknown_conversation", "no earlier conversation of yours by that id")


async def _limit(channel: WebChannel, who: str, what: str) -> None:
    """429 with `Retry-After` when `who` is over the posting rate."""
    wait = await channel.rate.take(who)
    if wait:
        seconds = PostingRate.retry_after(wait)
        raise ApiError(
            429,
            "rate_limited",
            f"too many {what}; try again in {seconds} s",
            headers={"Retry-After": str(seconds)},
        )


async def post_message(request: web.Request) -> web.Response:
    session = await _session(request)
    body = await read_object(request, required=["text"])
    text = body["text"]
    if isinstance(text, str) and len(text) > MAX_WIDGET_TEXT:
        raise TooLarge(
            f"a message from the widget is at most {MAX_WIDGET_TEXT} characters; "
            f"this one has {len(text)}",
            code="too_large",
        )
    text = check_text(text)
    channel = request.app[WEB_KEY]
    await _limit(channel, session.identity, "messages")
    author = await _current_person(request, session)
    message = await request.app[DATABASE_KEY].threads.post_message(
        ThreadId(session.conversation), author, text, channel="web"
    )
    shown = await widget_event(message, viewer=author, names=channel.names)
    # Location: the history page that holds this message alone.
    return created(
        {"event": shown}, f"{PREFIX}/history?before={message.seq + 1}&limit=1&archived=true"
    )


# --- approvals ----------------------------------------------------------------------------------


async def answer_approval(request: web.Request) -> web.Response:
    """The session's person answers an approval of their conversation with one of its options:
    the first valid answer from any channel resolves it; a later one is 409 `approval_closed`,
    saying how it was resolved and by whom."""
    session = await _session(request)
    body = await read_object(request, required=["option"])
    channel = request.app[WEB_KEY]
    await _limit(channel, f"approval:{session.identity}", "answers")
    person = await _current_person(request, session)
    database = request.app[DATABASE_KEY]
    asked = await _approval_here(database, request.match_info["id"], session, person)
    try:
        answered = await database.approvals.answer(asked, person, body["option"], channel="web")
    except ApprovalClosed:
        _, resolution = await database.approvals.get(asked.id, viewer=person)
        told = await too_late(resolution, viewer=person, names=channel.names)
        raise ApprovalClosed(told) from None
    # 200, as the API answers an approval: the answer acts on the approval, which exists already.
    shown = await widget_event(answered, viewer=person, names=channel.names)
    return web.json_response({"event": shown})


async def _approval_here(
    database: Database, approval_id: str, session: WidgetSession, person: Address
) -> ApprovalRequested:
    """The approval of the session's conversation that `person` sees; any other id — unknown,
    another conversation's, asked while the person was removed — is the same 404."""
    try:
        asked, _ = await database.approvals.get(
            approval_id, thread_id=ThreadId(session.conversation), viewer=person
        )
    except NotFound:
        raise NotFound(
            f"no approval with id {approval_id!r} in this conversation", code="approval_not_found"
        ) from None
    return asked


async def _resolutions(
    database: Database, thread_id: ThreadId, viewer: Address, events: Iterable[AnyEvent]
) -> dict[EventId, ApprovalResolved]:
    """How the approvals asked among `events` were resolved, as far as `viewer` sees: from the
    page itself, the others in one read."""
    events = list(events)
    on_page = {e.target: e for e in events if isinstance(e, ApprovalResolved)}
    elsewhere = [e.id for e in events if isinstance(e, ApprovalRequested) and e.id not in on_page]
    return {**await database.approvals.resolutions(thread_id, elsewhere, viewer), **on_page}


async def start_fresh(request: web.Request) -> web.Response:
    session = await _session(request)
    await read_object(request, empty_ok=True)
    await _current_person(request, session)
    database = request.app[DATABASE_KEY]
    thread_id = ThreadId(session.conversation)
    run, _ = await database.runs.ensure_conversation_run(thread_id, session.role)
    fresh = await request.app[HOST_KEY].start_fresh(run.id)
    del fresh
    page = await database.threads.latest(thread_id, limit=1)
    archive_before = page.events[-1].seq if page.events else 0
    return web.json_response({"archive_before": archive_before})


async def new_link_code(request: web.Request) -> web.Response:
    session = await _session(request)
    await read_object(request, empty_ok=True)
    await _current_person(request, session)
    code = await request.app[DATABASE_KEY].people.new_link_code(session.person, LINK_CODE_TTL)
    # The code is shown once; Location is the conversation of the person it links to.
    return created({"code": code.code, "expires_at": rfc3339(code.expires_at)}, f"{PREFIX}/history")


async def redeem_link_code(request: web.Request) -> web.Response:
    """This browser's identity joins the code's person; a new session, as them."""
    session = await _session(request)
    body = await read_object(request, required=["code"])
    await _current_person(request, session)
    role = request.app[ROLES_KEY].get(session.role)
    if role is None:
        raise ApiError(404, "unknown_role", f"role {session.role!r} is no longer served here")
    channel = request.app[WEB_KEY]
    await _limit(channel, f"link:{session.identity}", "link code attempts")  # codes are short
    database = request.app[DATABASE_KEY]
    identity = parse_identity(session.identity)
    person = await database.people.redeem(body["code"], identity)
    members = ParticipantSet.of([person.address, f"role:{session.role}"])
    thread, _ = await database.threads.resolve(members)
    token, renewed = channel.keys.new_session(
        person=person.slug,
        identity=session.identity,
        site=session.site,
        role=session.role,
        conversation=thread.id,
    )
    latest = await database.threads.latest(thread.id, viewer=person.address, limit=1)
    return web.json_response(
        {
            "session_token": token,
            "expires_at": rfc3339(renewed.expires_at),
            "person": {"slug": person.slug, "display_name": person.display_name},
            "role": widget_role(role),
            "conversation": thread.id,
            "last_seq": latest.events[-1].seq if latest.events else 0,
        }
    )


# --- the live stream ----------------------------------------------------------------------------


async def stream(request: web.Request) -> web.StreamResponse:
    params = read_query(request, ["token", "after"])
    session = await _session(request, token=params.get("token"))
    viewer = await _current_person(request, session)
    after = _last_event_id(request, params)
    channel = request.app[WEB_KEY]
    database = request.app[DATABASE_KEY]
    thread_id = ThreadId(session.conversation)
    subscription = channel.fanout.subscribe(thread_id)  # before reading: nothing falls between
    try:
        thread = await database.threads.get(thread_id)
        state = ViewerState(viewer, thread.states[viewer])
        if after is None:
            latest = await database.threads.latest(thread_id, viewer=viewer, limit=1)
            after = latest.events[-1].seq if latest.events else 0
        response = EventSourceResponse(ping_interval=PING_SECONDS)
        await response.prepare(request)
        channel.streams.add(response)
        try:
            await _serve(response, database, channel, subscription, state, after)
        finally:
            channel.streams.discard(response)
        return response
    finally:
        channel.fanout.unsubscribe(subscription)


def _erases(event: AnyEvent, viewer: Address) -> bool:
    """The viewer was erased: their stream sends this and ends."""
    return isinstance(event, Erased) and event.participant == viewer


def _last_event_id(request: web.Request, params: dict[str, str]) -> int | None:
    raw = request.headers.get("Last-Event-ID") or params.get("after")
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 18:
        raise InvalidInput(
            f"Last-Event-ID and after must be a seq (a whole number), not {raw!r}",
            code="invalid_parameter",
        )
    return int(raw)


async def _serve(
    response: EventSourceResponse,
    database: Database,
    channel: WebChannel,
    subscription: Subscription,
    state: ViewerState,
    last: int,
) -> None:
    """Send what the browser missed, then what happens, until the browser goes away.

    A timeline event's frame is rendered once per viewer, however many of their streams are
    open (`Frames`), and written as it is; the stream waits on its queue alone — the connection
    closing puts a `Closed` marker in it."""
    thread_id = subscription.thread_id

    async def send(event: AnyEvent) -> None:
        frame = await channel.frames.of(event, state.viewer, channel.names)
        if not frame:
            return
        where = {"rolecall.thread_id": thread_id, "rolecall.viewer": state.viewer}
        with tracing.delivery("rolecall.widget.stream", event.id, alone=False, attributes=where):
            await response.write(frame)

    async def catch_up(last: int) -> int | None:
        """Send what the database has after `last`; the seq sent last, or None once the
        viewer's erasure was sent (the stream ends)."""
        while True:
            page = await database.threads.timeline(
                thread_id, viewer=state.viewer, after=last, limit=CATCH_UP_PAGE
            )
            for event in page.events:
                state.sees(event)
                await send(event)
                last = event.seq
                if _erases(event, state.viewer):
                    return None
            if not page.more:
                return last

    closed = asyncio.ensure_future(response.wait())
    closed.add_done_callback(lambda _: subscription.close())
    try:
        # Reconnect a second after a drop (browsers wait about three by default).
        await response.send("{}", event="ready", retry=RECONNECT_MS)
        caught = await catch_up(last)
        if caught is None:
            return
        last = caught
        for role in channel.fanout.working(thread_id):
            await response.write(working_frame(role, True))
        while True:
            item = await subscription.next()
            if isinstance(item, Closed):
                return
            if isinstance(item, Working):
                await response.write(working_frame(item.role, item.working))
                continue
            if isinstance(item, Overflowed) or item.seq > last + 1:
                caught = await catch_up(last)  # fell behind, or something fell between
                if caught is None:
                    return
                last = caught
            elif item.seq <= last:
                continue  # sent already, from the database
            else:
                last = item.seq
                if state.sees(item):
                    await send(item)
                    if _erases(item, state.viewer):
                        return
    except (ConnectionResetError, RuntimeError):
        return  # the browser went away mid-send
    finally:
        closed.cancel()
