"""Wiring the Slack channel into the application: for every role whose manifest has a `slack:`
section, its bolt app (events over HTTP at `/slack/{role}/events` and clicks on buttons at
`/slack/{role}/interactivity`, or both over Socket Mode), its inbound handlers, the answers to
approvals and its delivery worker, started and stopped with the gateway; for a role
installed over OAuth, its install flow too (`/slack/{role}/install`, `/slack/{role}/oauth_redirect`;
`channels/slack/install.py`), whose stores share one engine on the gateway's database."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from sqlalchemy.ext.asyncio import AsyncEngine

from channels.edge.errors import ApiError, error_response
from channels.edge.leasing import ONE_PROCESS, LeaseTerms
from channels.edge.requests import DATABASE_KEY, HOST_KEY
from channels.slack import install
from channels.slack.answers import Answers
from channels.slack.apps import (
    WEB_API_TIMEOUT,
    Clients,
    SlackCredentials,
    bolt_app,
    credentials,
    web_client,
)
from channels.slack.delivery import Delivery
from channels.slack.inbound import Inbound
from channels.slack.verify import check_signature, read_event, read_interaction
from core.model.roles import Role

log = logging.getLogger("rolecall.slack")


@dataclass
class SlackRole:
    role: Role
    credentials: SlackCredentials
    bolt: AsyncApp | None = None
    delivery: Delivery | None = None
    socket: AsyncSocketModeHandler | None = None
    oauth: AsyncOAuthFlow | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackConfig:
    """What the Slack channel takes from the gateway's settings (the gateway builds it)."""

    roles_dir: Path
    """Where the role manifests are: a missing secret's error names the manifest."""
    api_url: str
    """Slack's Web API (a fake one in tests)."""
    database_url: str
    """The gateway's database, where OAuth installations and states are kept."""
    base_url: str
    pace: float
    """Seconds between two posts to one DM (Slack's rate limit for `chat.postMessage`)."""
    email_link_teams: frozenset[str]
    """Teams whose members' verified Slack email links them to a person with that email."""
    leases: LeaseTerms = ONE_PROCESS
    """How each role's delivery is held: by one replica at a time (`LeaseKind.SLACK`)."""


SLACK_KEY = web.AppKey("slack", dict[str, SlackRole])


def add_routes(
    app: web.Application,
    config: SlackConfig,
    roles: Mapping[str, Role],
    secrets: Mapping[str, str],
) -> None:
    """Mount the Slack apps of the roles that have one. A missing secret stops start-up with the
    manifest, the field and the setting (`ManifestError`)."""
    slack = {
        name: SlackRole(
            role,
            credentials(role, secrets, where=str(config.roles_dir / f"{name}.yaml")),
        )
        for name, role in roles.items()
        if role.slack is not None
    }
    app[SLACK_KEY] = slack
    app.router.add_post("/slack/{role}/events", events)
    app.router.add_post("/slack/{role}/interactivity", interactivity)
    app.router.add_get("/slack/{role}/install", install_page)
    app.router.add_get("/slack/{role}/oauth_redirect", oauth_redirect)
    if slack:
        app.cleanup_ctx.append(lambda app: _lifecycle(app, config))


async def _lifecycle(app: web.Application, config: SlackConfig) -> AsyncIterator[None]:
    database, host = app[DATABASE_KEY], app[HOST_KEY]
    started: list[SlackRole] = []
    stops: list[Callable[[], None]] = []
    engine: AsyncEngine | None = None
    # The Web API calls of every role share this session's connections; a call's time limit
    # is the session's (the SDK applies its own `timeout` only to sessions it makes itself).
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WEB_API_TIMEOUT))
    leasing = config.leases.leasing(database.leases)
    try:
        for entry in app[SLACK_KEY].values():
            role, creds = entry.role, entry.credentials
            client = web_client(creds.bot_token, config.api_url, session)
            clients = Clients.one_workspace(client)
            if creds.client_id is not None:  # installed over OAuth: `client` has no token
                engine = engine or install.open_engine(config.database_url)
                entry.oauth = install.oauth_flow(
                    role, creds, engine=engine, client=client, base_url=config.base_url
                )
                rotator = install.token_rotator(creds, client)
                installations = entry.oauth.settings.installation_store
                clients = Clients.installed(config.api_url, installations, rotator, session)
            entry.delivery = Delivery(role, database, clients, pace=config.pace, leasing=leasing)
            entry.bolt = bolt_app(role, creds, client, oauth=entry.oauth)
            teams = config.email_link_teams
            inbound = Inbound(role, database, host, entry.delivery, email_link_teams=teams)
            inbound.register(entry.bolt)
            stops.append(database.listen(inbound.on_commit))
            answers = Answers(role, database, entry.delivery.name_of)
            answers.register(entry.bolt)
            stops.append(answers.close)
            await entry.delivery.start()
            started.append(entry)
            stops.append(database.listen(entry.delivery.on_commit))
            stops.append(host.watch_activity(entry.delivery.on_activity))
            stops.append(host.watch_drafts(entry.delivery.streams.on_draft))
            if role.slack is not None and role.slack.mode == "socket":
                entry.socket = AsyncSocketModeHandler(
                    entry.bolt, app_token=creds.app_token, web_client=client
                )
                await entry.socket.connect_async()  # type: ignore[no-untyped-call]
        yield
    finally:
        for stop in stops:
            stop()
        for entry in started:
            if entry.socket is not None:
                await entry.socket.close_async()  # type: ignore[no-untyped-call]
            if entry.delivery is not None:
                await entry.delivery.stop()
        if engine is not None:
            await engine.dispose()
        await session.close()


async def events(request: web.Request) -> web.Response:
    """Slack's Events API for one role's app: its signature checked over the raw bytes before
    anything else (401), the body read as Slack sends it (400, 422; `channels/slack/verify.py`),
    then answered by bolt (`url_verification`), a person's message committed before the 200."""
    return await _from_slack(request, read_event)


async def interactivity(request: web.Request) -> web.Response:
    """Clicks on the buttons of the role's app's messages (`block_actions`), checked as events
    are (`read_interaction`); an answer to an approval is committed before the 200
    (`channels/slack/answers.py`)."""
    return await _from_slack(request, read_interaction)


async def _from_slack(
    request: web.Request, read: Callable[[bytes], dict[str, Any]]
) -> web.Response:
    name = request.match_info["role"]
    entry = request.app[SLACK_KEY].get(name)
    if entry is None or entry.bolt is None:
        raise ApiError(404, "unknown_role", f"no role named {name!r} has a Slack app here")
    if entry.role.slack is not None and entry.role.slack.mode == "socket":
        raise ApiError(404, "socket_mode", f"role {name!r} takes its events over Socket Mode")
    raw = await request.read()
    try:
        check_signature(entry.credentials.signing_secret or "", request.headers, raw, time.time())
    except ApiError as refusal:
        log.info("slack request to role %s refused: %s", name, refusal.message)
        raise
    read(raw)
    try:
        bolt_request = AsyncBoltRequest(
            body=raw.decode(),
            query=request.query_string,
            headers=request.headers,  # type: ignore[arg-type]
        )
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
        # Bolt reads the team, user and channel out of the body as it builds its request,
        # assuming Slack's shapes (`authorizations` a list of objects, and so on).
        log.info("slack event to role %s not understood: %r", name, error)
        raise ApiError(
            422, "invalid_slack_event", f"not an event as Slack sends it: {error}"
        ) from None
    return _our_shape(await entry.bolt.async_dispatch(bolt_request))


_BOLT_CODES = {401: "invalid_signature", 404: "unhandled_event"}


def _our_shape(answer: BoltResponse) -> web.Response:
    """Bolt's answer; a failure in the gateway's error shape, never bolt's own body. A failure
    of the handler (bolt answers 500, and logs it) is a 503: the event was not recorded, and
    Slack sends it again."""
    if answer.status < 400:
        body = answer.body
        content_type = "application/json" if body.startswith("{") else "text/plain"
        return web.Response(status=answer.status, text=body, content_type=content_type)
    if answer.status >= 500:
        return error_response(
            503,
            "event_not_recorded",
            "the event could not be recorded now; Slack sends it again",
            headers={"Retry-After": "1"},
        )
    try:
        said = json.loads(answer.body).get("error") if answer.body.startswith("{") else None
    except ValueError:
        said = None
    message = f"slack event refused: {said}" if isinstance(said, str) else "slack event refused"
    return error_response(answer.status, _BOLT_CODES.get(answer.status, "bad_request"), message)


async def install_page(request: web.Request) -> web.Response:
    """Installing the role's app in a workspace begins here: on to Slack's authorize page."""
    flow = _oauth(request)
    return await to_aiohttp_response(await flow.handle_installation(await to_bolt_request(request)))


async def oauth_redirect(request: web.Request) -> web.Response:
    """Slack sends the installer back here: the installation is stored, and a page says so."""
    flow = _oauth(request)
    return await to_aiohttp_response(await flow.handle_callback(await to_bolt_request(request)))


def _oauth(request: web.Request) -> AsyncOAuthFlow:
    name = request.match_info["role"]
    entry = request.app[SLACK_KEY].get(name)
    if entry is None or entry.bolt is None:
        raise ApiError(404, "unknown_role", f"no role named {name!r} has a Slack app here")
    if entry.oauth is None:
        raise ApiError(
            404,
            "not_installed_over_oauth",
            f"role {name!r}'s Slack app is installed in one workspace, with a bot token",
        )
    return entry.oauth
