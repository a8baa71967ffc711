"""A fake Slack on loopback: the Web API, Socket Mode, and the payloads Slack sends to an app.

`FakeSlack` is an aiohttp server on 127.0.0.1 that answers the Web API methods the Slack channel
uses (`POST` or `GET /api/<method>`; arguments in the query, a form or a JSON body; the token in
`Authorization: Bearer …`) the way slack.com does, closely enough that the real `slack_sdk` and
`slack_bolt` clients work against it unchanged but for `base_url`. It keeps a small world — apps,
their bots (one per workspace), people, DM and group-DM channels and their messages — and records
every call made to it, in order.

Invariants to rely on:
- Each request is recorded once, when it arrives, together with the answer it got. An accepted
  call (`Call.ok`) has taken effect before its answer is sent, so a client that gave up on a
  delayed answer (`delay`) has still posted, as with the real Slack.
- `ts` values come from one counter (`next_ts`), strictly increasing across all channels.
- Faults are per method and count down: `rate_limit`, `fail` and `delay` apply to the next
  `times` calls of that method (`times=None`: every call until `clear_faults`).
- An outage (`outage`, until `end_outage`) fails every Web API call, in turn each of its
  `kinds`: `error` (HTTP 500 with an HTML page, no effect), `taken` (the call takes effect,
  and the answer is a 503 — the worst case: it happened, and the client cannot know), `drop`
  (no effect; the connection is held `hang` seconds and then dropped, as a client's timeout
  sees it).
- Messages keep the `metadata` they were posted (or stream-stopped, or updated) with;
  `conversations.history` and `conversations.replies` answer it with `include_all_metadata`.
  `chat.update` changes a message in place (what it is not given stays, as with Slack).
- `chat.postEphemeral` shows a message to one member of a channel: it is kept apart
  (`ephemerals`), never in the channel's history.
- A person clicks only a button that is there: `click` finds it in the message as it is now and
  builds the `block_actions` payload Slack sends the app (to post with `interactivity_body`, or
  in a Socket Mode envelope of type `interactive`).
- A bot sees only its own channels: the DM of bot X with a person is not bot Y's DM.

Socket Mode: `apps.connections.open` (app-level token) hands out a single-use URL
`ws://127.0.0.1:<port>/socket/<n>?ticket=…`; the socket says `hello`, carries the envelopes a test
sends (`socket_send_event`) and keeps the client's acks (`socket_ack`).

The module's functions build what Slack sends to an app: signed request headers, the Events API
envelope (`event_callback`) and the `message` events of DMs, edits, deletions and bots.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import hashlib
import hmac
import json
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.test_utils import TestServer

from tests.serving import serve

TEAM_ID = "T0FAKETEAM"


@dataclass(frozen=True, slots=True, kw_only=True)
class App:
    """A Slack app: its id, app-level token (Socket Mode), OAuth client and signing secret."""

    app_id: str = "A0FAKEAPP1"
    app_token: str = "xapp-1-A0FAKEAPP1-0001-fake"
    client_id: str = "1700000000.1700000001"
    client_secret: str = "fake-client-secret"
    signing_secret: str = "fake-signing-secret"


@dataclass(frozen=True, slots=True, kw_only=True)
class Bot:
    """An app's bot user in one workspace, with its bot token.

    `scopes=None` allows every method; a set makes methods answer `missing_scope` like Slack, and
    `users.info` include `profile.email` only with `users:read.email`.
    """

    token: str = "xoxb-fake-0001"
    app_id: str = "A0FAKEAPP1"
    team_id: str = TEAM_ID
    team_name: str = "Fake Workspace"
    user_id: str = "U0FAKEBOT1"
    bot_id: str = "B0FAKEBOT1"
    name: str = "rolecall"
    scopes: frozenset[str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class User:
    """A person in a workspace, as `users.info` describes them. `email_confirmed` is Slack's
    `is_email_confirmed` (true for a person with an email unless said otherwise)."""

    id: str
    name: str
    real_name: str
    display_name: str = ""
    email: str | None = None
    email_confirmed: bool = True
    team_id: str = TEAM_ID


ALICE = User(
    id="U0ALICE001",
    name="alice",
    real_name="Alice Adams",
    display_name="alice",
    email="alice@example.com",
)
BOB = User(
    id="U0BOB00001", name="bob", real_name="Bob Baker", display_name="bob", email="bob@example.com"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One request to the Web API and the answer it got."""

    method: str
    args: dict[str, Any]  # query, form and JSON body merged; form and query values are strings
    token: str | None
    headers: dict[str, str]
    at: float  # time.monotonic() on arrival
    status: int
    response: dict[str, Any]
    delayed: float = 0.0

    @property
    def ok(self) -> bool:
        """Slack accepted the call (and it took effect)."""
        return self.status == 200 and self.response.get("ok") is True


@dataclass(slots=True, kw_only=True)
class SocketConnection:
    """One Socket Mode WebSocket a client opened, with the frames each way."""

    number: int
    app_id: str
    ws: web.WebSocketResponse
    sent: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False


class SlackError(Exception):
    """A refusal, answered as `{"ok": false, "error": error, **extra}`."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


@dataclass(slots=True, kw_only=True)
class _Channel:
    id: str
    type: str  # "im" or "mpim"
    members: frozenset[str]
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)  # by ts, oldest first


@dataclass(slots=True, kw_only=True)
class _Fault:
    remaining: int | None
    error: str = ""
    seconds: float = 0.0
    retry_after: int = 1


_HISTORY_SCOPE = {"im": "im:history", "mpim": "mpim:history"}
_OPEN_SCOPE = {"im": "im:write", "mpim": "mpim:write"}


class FakeSlack:
    """The fake Slack server; `async with FakeSlack(...) as fake:` or `start()` / `close()`."""

    def __init__(
        self,
        *,
        apps: Iterable[App] = (App(),),
        bots: Iterable[Bot] = (Bot(),),
        users: Iterable[User] = (),
        token_rotation: bool = False,
        first_ts: str = "1700000000.000100",
    ) -> None:
        self.apps = {app.app_id: app for app in apps}
        self.users = {user.id: user for user in users}
        self.token_rotation = token_rotation
        self.recorded: list[Call] = []
        self.ephemerals: list[dict[str, Any]] = []
        """`chat.postEphemeral` messages, in order: `{channel, user, text, ts}`."""
        self.socket_connections: list[SocketConnection] = []
        self._bots = {bot.token: bot for bot in bots}
        self._first_bot = next(iter(self._bots.values()))
        self._channels: dict[str, _Channel] = {}
        self._by_members: dict[frozenset[str], str] = {}
        self._streaming: set[tuple[str, str]] = set()
        self._statuses: dict[tuple[str, str], str] = {}
        self._oauth_codes: dict[str, tuple[Bot, str]] = {}
        self._refresh_tokens: dict[str, Bot] = {}
        self._expired: set[str] = set()
        self._tickets: dict[str, tuple[int, str]] = {}
        self._acks: dict[str, dict[str, Any]] = {}
        self._rate_limits: dict[str, _Fault] = {}
        self._failures: dict[str, _Fault] = {}
        self._delays: dict[str, _Fault] = {}
        self._outage: tuple[str, ...] = ()
        self._outage_hang = 0.0
        self._outage_calls = 0
        seconds, micros = first_ts.split(".")
        self._ts_us = int(seconds) * 1_000_000 + int(micros.ljust(6, "0")) - 100
        self._seq = 0
        self._socket_seq = 0
        self._changed = asyncio.Condition()
        self._closing = asyncio.Event()
        self._server: TestServer | None = None
        self._serving = contextlib.AsyncExitStack()
        # method → handler(caller, args); the caller is the token's Bot, or the App for
        # apps.connections.open (app-level token) and oauth.v2.access (client credentials)
        self._methods: dict[str, Callable[[Any, dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._chat_post_message,
            "chat.update": self._chat_update,
            "chat.postEphemeral": self._chat_post_ephemeral,
            "chat.delete": self._chat_delete,
            "chat.startStream": self._chat_start_stream,
            "chat.appendStream": self._chat_append_stream,
            "chat.stopStream": self._chat_stop_stream,
            "conversations.history": self._conversations_history,
            "conversations.replies": self._conversations_replies,
            "conversations.open": self._conversations_open,
            "conversations.members": self._conversations_members,
            "users.info": self._users_info,
            "assistant.threads.setStatus": self._assistant_set_status,
            "apps.connections.open": self._apps_connections_open,
            "oauth.v2.access": self._oauth_v2_access,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get(r"/socket/{number:\d+}", self._socket)
        self._server = await self._serving.enter_async_context(serve(app))
        return self

    async def close(self) -> None:
        self._closing.set()  # delayed answers go out now rather than hold the shutdown
        for connection in self.socket_connections:
            if not connection.ws.closed:
                await connection.ws.close(code=WSCloseCode.GOING_AWAY)
        await self._serving.aclose()

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.port is not None, "not started"
        return self._server.port

    @property
    def api_url(self) -> str:
        """The `base_url` for `AsyncWebClient`: `http://127.0.0.1:<port>/api/`."""
        return f"http://127.0.0.1:{self.port}/api/"

    # -- the world -----------------------------------------------------------------------------

    @property
    def app(self) -> App:
        return next(iter(self.apps.values()))

    @property
    def bot(self) -> Bot:
        """The first bot configured (the usual one)."""
        return self._first_bot

    @property
    def bots(self) -> list[Bot]:
        return list(self._bots.values())

    def add_user(self, user: User) -> None:
        self.users[user.id] = user

    def add_bot(self, bot: Bot) -> None:
        self._bots[bot.token] = bot

    def add_oauth_code(self, code: str, bot: Bot, *, installer: str = ALICE.id) -> None:
        """`oauth.v2.access` with this code (once) installs `bot` and answers with its token."""
        self._oauth_codes[code] = (bot, installer)

    def expire_token(self, token: str) -> None:
        """From now on calls with this token answer `token_expired`."""
        self._expired.add(token)

    def next_ts(self) -> str:
        self._ts_us += 100
        return f"{self._ts_us // 1_000_000}.{self._ts_us % 1_000_000:06d}"

    def dm_channel(self, user: User | str, *, bot: Bot | None = None) -> str:
        """The id of the DM between `user` and the bot (opened if need be, nothing recorded)."""
        return self._open(bot or self.bot, [_uid(user)]).id

    def mpim_channel(self, *users: User | str, bot: Bot | None = None) -> str:
        """The id of the group DM of these people and the bot."""
        return self._open(bot or self.bot, [_uid(user) for user in users]).id

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """The channel's messages now (thread replies included), oldest first, with metadata."""
        return [copy.deepcopy(m) for m in self._channels[channel].messages.values()]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        found = self._channels[channel].messages.get(ts)
        return copy.deepcopy(found) if found is not None else None

    def status(self, channel: str, thread_ts: str) -> str | None:
        """The thread's `assistant.threads.setStatus` status ("" once cleared), None if never set.

        Like Slack, the bot's reply in the thread clears it.
        """
        return self._statuses.get((channel, thread_ts))

    def is_streaming(self, channel: str, ts: str) -> bool:
        return (channel, ts) in self._streaming

    # -- what people do (stored in the channel, returned as the Events API payload) -----------

    def user_message(
        self,
        user: User | str,
        text: str,
        *,
        channel: str | None = None,
        thread_ts: str | None = None,
        bot: Bot | None = None,
    ) -> dict[str, Any]:
        """A person writes in their DM with the bot (or in `channel`, a group DM)."""
        bot = bot or self.bot
        uid = _uid(user)
        found = self._channels[channel] if channel else self._open(bot, [uid])
        event = message_event(
            user=uid,
            text=text,
            channel=found.id,
            ts=self.next_ts(),
            team=self._team(uid, bot),
            channel_type=found.type,
        )
        stored = _strip_event(event)
        found.messages[stored["ts"]] = stored
        if thread_ts:
            self._reply_in_thread(found, thread_ts, stored)
        return self.event_payload({**stored, **_event_fields(found, stored["ts"])}, bot=bot)

    def user_edit(
        self, channel: str, ts: str, text: str, *, bot: Bot | None = None
    ) -> dict[str, Any]:
        """A person edits their message: `message_changed`."""
        found = self._channels[channel]
        old = found.messages[ts]
        event = message_changed(
            user=old["user"],
            text=text,
            previous_text=old["text"],
            channel=channel,
            message_ts=ts,
            ts=self.next_ts(),
            team=old.get("team", TEAM_ID),
            channel_type=found.type,
            thread_ts=old.get("thread_ts"),
        )
        old.update(text=text, blocks=event["message"]["blocks"], edited=event["message"]["edited"])
        return self.event_payload(event, bot=bot)

    def user_delete(self, channel: str, ts: str, *, bot: Bot | None = None) -> dict[str, Any]:
        """A person deletes their message: `message_deleted`."""
        found = self._channels[channel]
        old = found.messages[ts]
        self._remove(found, ts)
        event = message_deleted(
            user=old["user"],
            previous_text=old["text"],
            channel=channel,
            deleted_ts=ts,
            ts=self.next_ts(),
            team=old.get("team", TEAM_ID),
            channel_type=found.type,
            thread_ts=old.get("thread_ts"),
        )
        return self.event_payload(event, bot=bot)

    def echo(self, channel: str, ts: str, *, bot: Bot | None = None) -> dict[str, Any]:
        """The `message` event Slack sends the app for the bot's own post (to be ignored)."""
        found = self._channels[channel]
        echoed = message_echo(found.messages[ts], channel=channel, channel_type=found.type)
        return self.event_payload(echoed, bot=bot)

    def event_payload(self, event: dict[str, Any], *, bot: Bot | None = None) -> dict[str, Any]:
        """`event` in the Events API envelope Slack sends the bot's app."""
        bot = bot or self.bot
        return event_callback(
            event, team_id=bot.team_id, api_app_id=bot.app_id, bot_user_id=bot.user_id
        )

    def click(
        self, user: User | str, channel: str, ts: str, action_id: str, *, bot: Bot | None = None
    ) -> dict[str, Any]:
        """A person clicks the button `action_id` of message `ts`: the `block_actions` payload.
        AssertionError when the message has no such button now (Slack shows only what is)."""
        bot = bot or self.bot
        found = self._channels[channel]
        uid = _uid(user)
        assert uid in found.members, f"{uid} is not in {channel}"
        message = found.messages[ts]
        buttons = [
            (block, element)
            for block in message.get("blocks") or []
            if block.get("type") == "actions"
            for element in block.get("elements") or []
        ]
        for block, element in buttons:
            if element.get("action_id") == action_id:
                return block_actions(
                    user=self.users.get(uid) or User(id=uid, name=uid, real_name=uid),
                    channel=found.id,
                    channel_type=found.type,
                    message=_public(message, False),
                    block_id=str(block.get("block_id", "")),
                    button=element,
                    bot=bot,
                    response_url=f"http://127.0.0.1:{self.port}/actions/{uuid.uuid4().hex}",
                )
        raise AssertionError(f"message {ts} has no button {action_id!r} now")

    def _team(self, uid: str, bot: Bot) -> str:
        return self.users[uid].team_id if uid in self.users else bot.team_id

    # -- faults --------------------------------------------------------------------------------

    def rate_limit(self, method: str, *, times: int | None = 1, retry_after: int = 1) -> None:
        """The next `times` calls answer HTTP 429, `Retry-After: retry_after`, `ratelimited`."""
        self._rate_limits[method] = _Fault(remaining=times, retry_after=retry_after)

    def fail(self, method: str, error: str, *, times: int | None = 1) -> None:
        """The next `times` calls are refused with `error` (and have no effect)."""
        self._failures[method] = _Fault(remaining=times, error=error)

    def delay(self, method: str, seconds: float, *, times: int | None = 1) -> None:
        """The next `times` calls take effect at once but are answered `seconds` later."""
        self._delays[method] = _Fault(remaining=times, seconds=seconds)

    def outage(
        self, kinds: Iterable[str] = ("error", "taken", "drop"), *, hang: float = 0.5
    ) -> None:
        """From now until `end_outage`, every Web API call fails: each of `kinds` in turn (see
        the module)."""
        self._outage = tuple(kinds)
        assert self._outage and set(self._outage) <= {"error", "taken", "drop"}, kinds
        self._outage_hang = hang

    def end_outage(self) -> None:
        self._outage = ()

    def clear_faults(self) -> None:
        self._rate_limits.clear()
        self._failures.clear()
        self._delays.clear()

    # -- what was asked ------------------------------------------------------------------------

    def calls(self, method: str | None = None, *, ok: bool | None = None) -> list[Call]:
        """The calls recorded, in arrival order; of one method, and accepted or not if asked."""
        return [
            call
            for call in self.recorded
            if (method is None or call.method == method) and (ok is None or call.ok is ok)
        ]

    async def wait_for(
        self, method: str, count: int = 1, *, ok: bool | None = None, within: float = 5.0
    ) -> list[Call]:
        """Wait until at least `count` such calls arrived; return them all."""
        await self._until(
            lambda: len(self.calls(method, ok=ok)) >= count,
            within,
            lambda: f"{count} {method} call(s) (ok={ok}); got {self.calls(method)}",
        )
        return self.calls(method, ok=ok)

    # -- Socket Mode -----------------------------------------------------------------------------

    async def wait_for_socket(
        self, *, app_id: str | None = None, newer_than: int = 0, within: float = 5.0
    ) -> SocketConnection:
        """The newest open socket (of that app, numbered above `newer_than`) once it said hello."""

        def newest() -> SocketConnection | None:
            return next(
                (
                    c
                    for c in reversed(self.socket_connections)
                    if not c.closed and app_id in (None, c.app_id) and c.number > newer_than
                ),
                None,
            )

        await self._until(lambda: newest() is not None, within, lambda: "an open socket")
        found = newest()
        assert found is not None
        return found

    async def socket_send_event(
        self,
        payload: dict[str, Any],
        *,
        envelope_type: str = "events_api",
        accepts_response_payload: bool = False,
        retry_attempt: int = 0,
        retry_reason: str = "",
        within: float = 5.0,
    ) -> str:
        """Send `payload` in an envelope on the newest socket of its app; return the envelope_id."""
        connection = await self.wait_for_socket(app_id=payload.get("api_app_id"), within=within)
        envelope: dict[str, Any] = {
            "envelope_id": str(uuid.uuid4()),
            "payload": payload,
            "type": envelope_type,
            "accepts_response_payload": accepts_response_payload,
        }
        if envelope_type == "events_api":
            envelope.update(retry_attempt=retry_attempt, retry_reason=retry_reason)
        await connection.ws.send_json(envelope)
        connection.sent.append(envelope)
        return str(envelope["envelope_id"])

    async def socket_ack(self, envelope_id: str, *, within: float = 5.0) -> dict[str, Any]:
        """Wait for the client's ack of the envelope: `{"envelope_id": …[, "payload": …]}`."""
        await self._until(
            lambda: envelope_id in self._acks, within, lambda: f"the ack of {envelope_id}"
        )
        return self._acks[envelope_id]

    async def socket_disconnect(
        self, reason: str = "refresh_requested", *, app_id: str | None = None
    ) -> SocketConnection:
        """Ask the newest socket's client to reconnect, as Slack does before it drops a socket."""
        connection = await self.wait_for_socket(app_id=app_id)
        frame = {"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}}
        await connection.ws.send_json(frame)
        connection.sent.append(frame)
        return connection

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        number = int(request.match_info["number"])
        ticket = self._tickets.pop(request.query.get("ticket", ""), None)
        if ticket is None or ticket[0] != number:
            raise web.HTTPUnauthorized(text="invalid or used ticket")
        ws = web.WebSocketResponse()  # autoping: answers the SDK's pings with the same data
        await ws.prepare(request)
        connection = SocketConnection(number=number, app_id=ticket[1], ws=ws)
        open_count = 1 + sum(
            1 for c in self.socket_connections if c.app_id == ticket[1] and not c.closed
        )
        hello = {
            "type": "hello",
            "num_connections": open_count,
            "debug_info": {
                "host": "applink-fake",
                "build_number": 1,
                "approximate_connection_time": 18060,
            },
            "connection_info": {"app_id": ticket[1]},
        }
        await ws.send_json(hello)
        connection.sent.append(hello)
        self.socket_connections.append(connection)
        await self._notify()
        try:
            async for frame in ws:
                if frame.type is WSMsgType.TEXT:
                    data = json.loads(frame.data)
                    connection.received.append(data)
                    if isinstance(data, dict) and isinstance(data.get("envelope_id"), str):
                        self._acks[data["envelope_id"]] = data
                    await self._notify()
        finally:
            connection.closed = True
        await self._notify()
        return ws

    # -- the Web API -------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        args = await _read_args(request)
        token = _bearer(request.headers) or _text(args.pop("token", None))
        if self._outage:
            return await self._down(request, method, args, token)
        status, body, headers = self._answer(method, args, token, request.headers)
        delay = _take(self._delays, method)
        await self._record(
            request, method, args, token, status, body, delayed=delay.seconds if delay else 0.0
        )
        if delay is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay.seconds):
                    await self._closing.wait()
        return web.json_response(body, status=status, headers=headers)

    async def _record(
        self,
        request: web.Request,
        method: str,
        args: dict[str, Any],
        token: str | None,
        status: int,
        body: dict[str, Any],
        *,
        delayed: float = 0.0,
    ) -> None:
        """Keep the call as answered, and tell whoever waits for calls."""
        self.recorded.append(
            Call(
                method=method,
                args=args,
                token=token,
                headers=dict(request.headers),
                at=time.monotonic(),
                status=status,
                response=body,
                delayed=delayed,
            )
        )
        await self._notify()

    async def _down(
        self, request: web.Request, method: str, args: dict[str, Any], token: str | None
    ) -> web.StreamResponse:
        """A call during an outage: the next of its kinds (see the module)."""
        kind = self._outage[self._outage_calls % len(self._outage)]
        self._outage_calls += 1
        if kind == "taken":
            status, body, _ = self._answer(method, args, token, request.headers)
            taken = status == 200 and body.get("ok") is True
            body = {"ok": False, "error": "service_unavailable", "fake_outage_taken": taken}
            status = 503
        else:
            status, body = (500, {}) if kind == "error" else (0, {})
        await self._record(request, method, args, token, status, body)
        if kind == "drop":
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._outage_hang):
                    await self._closing.wait()
            assert request.transport is not None
            request.transport.abort()
            raise web.HTTPServiceUnavailable()  # never sent: the connection is gone
        if kind == "error":
            page = "<html><body><h1>500 Internal Server Error</h1></body></html>"
            return web.Response(status=500, text=page, content_type="text/html")
        return web.json_response(body, status=status)

    def _answer(
        self, method: str, args: dict[str, Any], token: str | None, headers: Mapping[str, str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        handler = self._methods.get(method)
        if handler is None:
            return 404, {"ok": False, "error": "unknown_method", "req_method": method}, {}
        limit = _take(self._rate_limits, method)
        if limit is not None:
            body = {"ok": False, "error": "ratelimited"}
            return 429, body, {"Retry-After": str(limit.retry_after)}
        try:
            if method == "oauth.v2.access":
                caller: Bot | App = self._oauth_client(headers, args)
            else:
                caller = self._authenticate(token, app_level=method == "apps.connections.open")
            failure = _take(self._failures, method)
            if failure is not None:
                raise SlackError(failure.error)
            return 200, {"ok": True, **handler(caller, args)}, {}
        except SlackError as refusal:
            return 200, {"ok": False, "error": refusal.error, **refusal.extra}, {}

    def _authenticate(self, token: str | None, *, app_level: bool) -> Bot | App:
        if token is None:
            raise SlackError("not_authed")
        if token in self._expired:
            raise SlackError("token_expired")
        app = next((a for a in self.apps.values() if a.app_token == token), None)
        bot = self._bots.get(token)
        if app is None and bot is None:
            raise SlackError("invalid_auth")
        if app_level and app is not None:
            return app
        if not app_level and bot is not None:
            return bot
        raise SlackError("not_allowed_token_type")

    def _auth_test(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://fake-workspace.slack.com/",
            "team": bot.team_name,
            "user": bot.name,
            "team_id": bot.team_id,
            "user_id": bot.user_id,
            "bot_id": bot.bot_id,
            "is_enterprise_install": False,
        }

    def _chat_post_message(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "chat:write")
        found = self._channel(bot, args.get("channel"), users_too=True)
        text, blocks = _text(args.get("text")), _json(args.get("blocks"), "invalid_blocks")
        if not text and not blocks and not args.get("attachments"):
            raise SlackError("no_text")
        posted = self._post(
            bot,
            found,
            text=text or "",
            blocks=blocks,
            thread_ts=_text(args.get("thread_ts")),
            metadata=_json(args.get("metadata"), "invalid_metadata_format"),
        )
        return {"channel": found.id, "ts": posted["ts"], "message": _public(posted, True)}

    def _chat_update(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "chat:write")
        found = self._channel(bot, args.get("channel"))
        message = self._own(bot, found, args.get("ts"), refusal="cant_update_message")
        if "text" in args:  # what is not given is kept, as with Slack
            message["text"] = args["text"]
        if "blocks" in args:
            message["blocks"] = _json(args["blocks"], "invalid_blocks")
        if "metadata" in args:
            message["metadata"] = _json(args["metadata"], "invalid_metadata_format")
        message["edited"] = {"user": bot.user_id, "ts": self.next_ts()}
        return {
            "channel": found.id,
            "ts": message["ts"],
            "text": message["text"],
            "message": _public(message, True),
        }

    def _chat_post_ephemeral(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "chat:write")
        found = self._channel(bot, args.get("channel"))
        user, text = _text(args.get("user")), _text(args.get("text"))
        if user is None or user not in found.members:
            raise SlackError("user_not_in_channel")
        if not text and not _json(args.get("blocks"), "invalid_blocks"):
            raise SlackError("no_text")
        ts = self.next_ts()
        self.ephemerals.append({"channel": found.id, "user": user, "text": text or "", "ts": ts})
        return {"message_ts": ts}

    def _chat_delete(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "chat:write")
        found = self._channel(bot, args.get("channel"))
        message = self._own(bot, found, args.get("ts"), refusal="cant_delete_message")
        self._remove(found, message["ts"])
        return {"channel": found.id, "ts": message["ts"]}

    def _chat_start_stream(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "chat:write")
        found = self._channel(bot, args.get("channel"))
        thread_ts = _text(args.get("thread_ts"))
        if not thread_ts:
            raise SlackError("invalid_arguments")
        posted = self._post(
            bot, found, text=_stream_text(args), blocks=None, thread_ts=thread_ts, metadata=None
        )
        self._streaming.add((found.id, posted["ts"]))
        return {"channel": found.id, "ts": posted["ts"]}

    def _chat_append_stream(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        found, message = self._stream(bot, args)
        message["text"] += _stream_text(args)
        return {"channel": found.id, "ts": message["ts"]}

    def _chat_stop_stream(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        found, message = self._stream(bot, args)
        message["text"] += _stream_text(args)
        if "blocks" in args:
            message["blocks"] = _json(args["blocks"], "invalid_blocks")
        if "metadata" in args:
            message["metadata"] = _json(args["metadata"], "invalid_metadata_format")
        self._streaming.discard((found.id, message["ts"]))
        return {"channel": found.id, "ts": message["ts"], "message": _public(message, True)}

    def _stream(self, bot: Bot, args: dict[str, Any]) -> tuple[_Channel, dict[str, Any]]:
        _need(bot, "chat:write")
        found = self._channel(bot, args.get("channel"))
        message = self._own(bot, found, args.get("ts"), refusal="cant_update_message")
        if (found.id, message["ts"]) not in self._streaming:
            raise SlackError("message_not_in_streaming_state")
        return found, message

    def _conversations_history(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        found = self._channel(bot, args.get("channel"))
        _need(bot, _HISTORY_SCOPE[found.type])
        top = [m for m in found.messages.values() if m.get("thread_ts", m["ts"]) == m["ts"]]
        return _page(list(reversed(top)), args, keep_first=False)

    def _conversations_replies(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        found = self._channel(bot, args.get("channel"))
        _need(bot, _HISTORY_SCOPE[found.type])
        parent = found.messages.get(_text(args.get("ts")) or "")
        if parent is None:
            raise SlackError("thread_not_found")
        root = parent.get("thread_ts", parent["ts"])
        thread = [m for m in found.messages.values() if root in (m["ts"], m.get("thread_ts"))]
        return _page(thread, args, keep_first=True)

    def _conversations_members(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        found = self._channel(bot, args.get("channel"))
        _need(bot, _OPEN_SCOPE[found.type].replace(":write", ":read"))
        return {"members": sorted(found.members), "response_metadata": {"next_cursor": ""}}

    def _conversations_open(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        uids = [uid.strip() for uid in str(args.get("users") or "").split(",") if uid.strip()]
        if not uids:
            raise SlackError("users_list_not_supplied")
        if len(uids) > 8:
            raise SlackError("too_many_users")
        _need(bot, _OPEN_SCOPE["im" if len(uids) == 1 else "mpim"])
        if any(uid not in self.users for uid in uids):
            raise SlackError("user_not_found")
        already = frozenset([bot.user_id, *uids]) in self._by_members
        found = self._open(bot, uids)
        channel: dict[str, Any] = {"id": found.id}
        if _flag(args.get("return_im")):
            channel.update(
                created=1700000000, is_im=found.type == "im", is_mpim=found.type == "mpim"
            )
            if found.type == "im":
                channel["user"] = uids[0]
        return {"channel": channel, **({"no_op": True, "already_open": True} if already else {})}

    def _users_info(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "users:read")
        uid = _text(args.get("user")) or ""
        with_email = bot.scopes is None or "users:read.email" in bot.scopes
        if uid in self.users:
            return {"user": _user_object(self.users[uid], with_email=with_email)}
        for other in self._bots.values():
            if other.user_id == uid:
                return {"user": _bot_user_object(other)}
        raise SlackError("user_not_found")

    def _assistant_set_status(self, bot: Bot, args: dict[str, Any]) -> dict[str, Any]:
        _need(bot, "chat:write", "assistant:write")
        found = self._channel(bot, args.get("channel_id"))
        thread_ts, status = _text(args.get("thread_ts")), args.get("status")
        if not thread_ts or not isinstance(status, str):
            raise SlackError("invalid_arguments")
        self._statuses[(found.id, thread_ts)] = status
        return {}

    def _apps_connections_open(self, app: App, args: dict[str, Any]) -> dict[str, Any]:
        self._socket_seq += 1
        number = self._socket_seq
        ticket = uuid.uuid4().hex
        self._tickets[ticket] = (number, app.app_id)
        url = f"ws://127.0.0.1:{self.port}/socket/{number}?ticket={ticket}&app_id={app.app_id}"
        return {"url": url}

    def _oauth_client(self, headers: Mapping[str, str], args: dict[str, Any]) -> App:
        client_id, secret = args.get("client_id"), args.get("client_secret")
        authorization = headers.get("Authorization", "")
        if authorization.startswith("Basic "):  # what the SDK sends; aiohttp's BasicAuth warns
            decoded = base64.b64decode(authorization.removeprefix("Basic ")).decode()
            client_id, _, secret = decoded.partition(":")
        app = next((a for a in self.apps.values() if a.client_id == client_id), None)
        if app is None:
            raise SlackError("invalid_client_id")
        if secret != app.client_secret:
            raise SlackError("bad_client_secret")
        return app

    def _oauth_v2_access(self, app: App, args: dict[str, Any]) -> dict[str, Any]:
        if args.get("grant_type") == "refresh_token":
            bot = self._refresh_tokens.pop(_text(args.get("refresh_token")) or "", None)
            if bot is None or bot.app_id != app.app_id:
                raise SlackError("invalid_refresh_token")
            bot = replace(bot, token=f"xoxe.xoxb-1-{uuid.uuid4().hex[:16]}")
            self._bots[bot.token] = bot  # the old token keeps working until expire_token()
            return self._installation(bot, installer=None)
        installed = self._oauth_codes.pop(_text(args.get("code")) or "", None)
        if installed is None or installed[0].app_id != app.app_id:
            raise SlackError("invalid_code")
        bot, installer = installed
        self._bots[bot.token] = bot
        return self._installation(bot, installer=installer)

    def _installation(self, bot: Bot, *, installer: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "app_id": bot.app_id,
            "scope": ",".join(sorted(bot.scopes or ())),
            "token_type": "bot",
            "access_token": bot.token,
            "bot_user_id": bot.user_id,
            "team": {"id": bot.team_id, "name": bot.team_name},
            "enterprise": None,
            "is_enterprise_install": False,
        }
        if installer is not None:
            body["authed_user"] = {"id": installer}
        if self.token_rotation:
            refresh_token = f"xoxe-1-{uuid.uuid4().hex}"
            self._refresh_tokens[refresh_token] = bot
            body.update(refresh_token=refresh_token, expires_in=43200)
        return body

    # -- channels and messages -------------------------------------------------------------------

    def _open(self, bot: Bot, uids: list[str]) -> _Channel:
        members = frozenset([bot.user_id, *uids])
        existing = self._by_members.get(members)
        if existing is not None:
            return self._channels[existing]
        self._seq += 1
        if len(uids) == 1:
            found = _Channel(id=f"D{self._seq:02d}{uids[0][1:]}", type="im", members=members)
        else:
            found = _Channel(id=f"C{self._seq:04d}MPIM", type="mpim", members=members)
        self._channels[found.id] = found
        self._by_members[members] = found.id
        return found

    def _channel(self, bot: Bot, channel: Any, *, users_too: bool = False) -> _Channel:
        if users_too and isinstance(channel, str) and channel in self.users:
            return self._open(bot, [channel])  # posting to a user id posts to the DM with them
        found = self._channels.get(channel) if isinstance(channel, str) else None
        if found is None or bot.user_id not in found.members:
            raise SlackError("channel_not_found")
        return found

    def _own(self, bot: Bot, found: _Channel, ts: Any, *, refusal: str) -> dict[str, Any]:
        message = found.messages.get(ts) if isinstance(ts, str) else None
        if message is None:
            raise SlackError("message_not_found")
        if message.get("bot_id") != bot.bot_id:
            raise SlackError(refusal)
        return message

    def _post(
        self,
        bot: Bot,
        found: _Channel,
        *,
        text: str,
        blocks: Any,
        thread_ts: str | None,
        metadata: Any,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "user": bot.user_id,
            "type": "message",
            "ts": self.next_ts(),
            "bot_id": bot.bot_id,
            "app_id": bot.app_id,
            "text": text,
            "team": bot.team_id,
            "bot_profile": {
                "id": bot.bot_id,
                "app_id": bot.app_id,
                "name": bot.name,
                "deleted": False,
                "team_id": bot.team_id,
            },
        }
        if blocks:
            message["blocks"] = blocks
        if metadata:
            message["metadata"] = metadata
        found.messages[message["ts"]] = message
        if thread_ts:
            self._reply_in_thread(found, thread_ts, message)
            if (found.id, thread_ts) in self._statuses:  # Slack clears the status on a reply
                self._statuses[(found.id, thread_ts)] = ""
        return message

    def _reply_in_thread(self, found: _Channel, thread_ts: str, reply: dict[str, Any]) -> None:
        reply["thread_ts"] = thread_ts
        parent = found.messages.get(thread_ts)
        if parent is None:
            return
        reply["parent_user_id"] = parent.get("user", "")
        parent["thread_ts"] = thread_ts
        parent["reply_count"] = parent.get("reply_count", 0) + 1
        parent.setdefault("reply_users", [])
        if reply["user"] not in parent["reply_users"]:
            parent["reply_users"].append(reply["user"])
        parent["reply_users_count"] = len(parent["reply_users"])
        parent["latest_reply"] = reply["ts"]

    def _remove(self, found: _Channel, ts: str) -> None:
        message = found.messages.pop(ts)
        self._streaming.discard((found.id, ts))
        parent = found.messages.get(message.get("thread_ts", ts))
        if parent is not None and "reply_count" in parent:
            parent["reply_count"] -= 1

    # -- waiting -----------------------------------------------------------------------------------

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _until(
        self, predicate: Callable[[], bool], within: float, expected: Callable[[], str]
    ) -> None:
        async with self._changed:
            try:
                async with asyncio.timeout(within):
                    await self._changed.wait_for(predicate)
            except TimeoutError:
                raise TimeoutError(f"not within {within}s: {expected()}") from None


# -- what Slack sends to an app --------------------------------------------------------------------


def signed_request_headers(
    body: bytes, signing_secret: str, timestamp: int | None = None
) -> dict[str, str]:
    """`X-Slack-Request-Timestamp` and `X-Slack-Signature` (v0, HMAC-SHA256 of `v0:{ts}:{body}`)."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(
        signing_secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256
    ).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def retry_headers(attempt: int, reason: str = "http_timeout") -> dict[str, str]:
    """The headers of Slack's redelivery of an event (`attempt` 1 to 3)."""
    return {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason}


def url_verification(challenge: str | None = None) -> dict[str, Any]:
    return {
        "token": "fake-verification-token",
        "challenge": challenge or uuid.uuid4().hex,
        "type": "url_verification",
    }


def event_callback(
    event: dict[str, Any],
    *,
    team_id: str,
    api_app_id: str,
    event_id: str | None = None,
    event_time: int | None = None,
    bot_user_id: str = Bot().user_id,
) -> dict[str, Any]:
    """The Events API envelope of `event`, as delivered over HTTP or in a Socket Mode envelope."""
    return {
        "token": "fake-verification-token",
        "team_id": team_id,
        "context_team_id": team_id,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()) if event_time is None else event_time,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-fake-{uuid.uuid4().hex[:8]}",
    }


def block_actions(
    *,
    user: User,
    channel: str,
    channel_type: str,
    message: dict[str, Any],
    block_id: str,
    button: dict[str, Any],
    bot: Bot,
    response_url: str,
) -> dict[str, Any]:
    """What Slack sends the app when `user` clicks `button` of `message` in `channel`."""
    return {
        "type": "block_actions",
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": bot.team_id},
        "api_app_id": bot.app_id,
        "token": "fake-verification-token",
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "trigger_id": f"1700000000.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex}",
        "team": {"id": bot.team_id, "domain": "fake-workspace"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "directmessage" if channel_type == "im" else "mpdm"},
        "message": message,
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": block_id,
                "text": {**button.get("text", {}), "emoji": True},
                "value": button.get("value", ""),
                **({"style": button["style"]} if "style" in button else {}),
                "type": button.get("type", "button"),
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def interactivity_body(payload: dict[str, Any]) -> bytes:
    """An interaction as Slack posts it to the request URL: a form, `payload=<JSON>`."""
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def message_event(
    *,
    user: str,
    text: str,
    channel: str,
    ts: str,
    team: str,
    channel_type: str,
    thread_ts: str | None = None,
    parent_user_id: str | None = None,
) -> dict[str, Any]:
    """A person's `message` event (`message.im` when channel_type is "im")."""
    event: dict[str, Any] = {
        "client_msg_id": str(uuid.uuid4()),
        "type": "message",
        "text": text,
        "user": user,
        "ts": ts,
        "blocks": _rich_text(text),
        "team": team,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
        if parent_user_id:
            event["parent_user_id"] = parent_user_id
    return {**event, "channel": channel, "event_ts": ts, "channel_type": channel_type}


def message_im(
    *, user: str, text: str, channel: str, ts: str, team: str, thread_ts: str | None = None
) -> dict[str, Any]:
    return message_event(
        user=user,
        text=text,
        channel=channel,
        ts=ts,
        team=team,
        channel_type="im",
        thread_ts=thread_ts,
    )


def message_mpim(
    *, user: str, text: str, channel: str, ts: str, team: str, thread_ts: str | None = None
) -> dict[str, Any]:
    return message_event(
        user=user,
        text=text,
        channel=channel,
        ts=ts,
        team=team,
        channel_type="mpim",
        thread_ts=thread_ts,
    )


def message_changed(
    *,
    user: str,
    text: str,
    previous_text: str,
    channel: str,
    message_ts: str,
    ts: str,
    team: str,
    channel_type: str = "im",
    thread_ts: str | None = None,
) -> dict[str, Any]:
    """A person edited message `message_ts` at `ts`: subtype `message_changed`."""
    client_msg_id = str(uuid.uuid4())

    def version(body: str) -> dict[str, Any]:
        shown = {
            "client_msg_id": client_msg_id,
            "type": "message",
            "text": body,
            "user": user,
            "team": team,
            "ts": message_ts,
            "blocks": _rich_text(body),
        }
        return {**shown, "thread_ts": thread_ts} if thread_ts else shown

    current = {
        **version(text),
        "edited": {"user": user, "ts": ts},
        "source_team": team,
        "user_team": team,
    }
    return {
        "type": "message",
        "subtype": "message_changed",
        "message": current,
        "previous_message": version(previous_text),
        "channel": channel,
        "hidden": True,
        "ts": ts,
        "event_ts": ts,
        "channel_type": channel_type,
    }


def message_deleted(
    *,
    user: str,
    previous_text: str,
    channel: str,
    deleted_ts: str,
    ts: str,
    team: str,
    channel_type: str = "im",
    thread_ts: str | None = None,
) -> dict[str, Any]:
    """A person deleted message `deleted_ts` at `ts`: subtype `message_deleted`."""
    previous: dict[str, Any] = {
        "type": "message",
        "text": previous_text,
        "user": user,
        "team": team,
        "ts": deleted_ts,
    }
    if thread_ts:
        previous["thread_ts"] = thread_ts
    return {
        "type": "message",
        "subtype": "message_deleted",
        "previous_message": previous,
        "channel": channel,
        "hidden": True,
        "deleted_ts": deleted_ts,
        "event_ts": ts,
        "ts": ts,
        "channel_type": channel_type,
    }


def bot_message(
    *,
    text: str,
    channel: str,
    ts: str,
    bot_id: str,
    username: str = "Some Bot",
    channel_type: str = "im",
) -> dict[str, Any]:
    """Another integration's post: subtype `bot_message`."""
    return {
        "type": "message",
        "subtype": "bot_message",
        "text": text,
        "ts": ts,
        "username": username,
        "bot_id": bot_id,
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type,
    }


def message_echo(
    message: dict[str, Any], *, channel: str, channel_type: str = "im"
) -> dict[str, Any]:
    """The `message` event for an app's own post (`message` as chat.postMessage answered it)."""
    shown = {k: v for k, v in copy.deepcopy(message).items() if k != "metadata"}
    return {**shown, "channel": channel, "event_ts": shown["ts"], "channel_type": channel_type}


# -- helpers ---------------------------------------------------------------------------------------


async def _read_args(request: web.Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            body = await request.json()
            if isinstance(body, dict):
                args.update(body)
        else:
            form = await request.post()
            args.update({k: v for k, v in form.items() if isinstance(v, str)})
    return args


def _bearer(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Authorization", "")
    return value.removeprefix("Bearer ").strip() or None if value.startswith("Bearer ") else None


def _take(faults: dict[str, _Fault], method: str) -> _Fault | None:
    fault = faults.get(method)
    if fault is None:
        return None
    if fault.remaining is not None:
        fault.remaining -= 1
        if fault.remaining <= 0:
            del faults[method]
    return fault


def _need(bot: Bot, *scopes: str) -> None:
    if bot.scopes is not None and not bot.scopes.intersection(scopes):
        provided = ",".join(sorted(bot.scopes))
        raise SlackError("missing_scope", needed=",".join(scopes), provided=provided)


def _uid(user: User | str) -> str:
    return user.id if isinstance(user, User) else user


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _flag(value: Any) -> bool:
    return value in (True, 1, "1", "true", "True")


def _json(value: Any, error: str) -> Any:
    """Blocks and metadata come as JSON in a JSON body and as JSON text in a form."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value) if value else None
    except ValueError:
        raise SlackError(error) from None


def _stream_text(args: dict[str, Any]) -> str:
    chunks = _json(args.get("chunks"), "invalid_chunks") or []
    pieces = [str(args.get("markdown_text") or "")]
    pieces += [str(c.get("text", "")) for c in chunks if c.get("type") == "markdown_text"]
    return "".join(pieces)


def _rich_text(text: str) -> list[dict[str, Any]]:
    section = {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
    return [{"type": "rich_text", "block_id": "fake", "elements": [section]}]


def _strip_event(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in ("channel", "event_ts", "channel_type")}


def _event_fields(found: _Channel, ts: str) -> dict[str, str]:
    return {"channel": found.id, "event_ts": ts, "channel_type": found.type}


def _public(message: dict[str, Any], with_metadata: bool) -> dict[str, Any]:
    shown = copy.deepcopy(message)
    if not with_metadata:
        shown.pop("metadata", None)
    return shown


def _page(
    messages: list[dict[str, Any]], args: dict[str, Any], *, keep_first: bool
) -> dict[str, Any]:
    """One page of `messages` (already in answer order) within oldest/latest, by limit/cursor."""
    oldest = Decimal(str(args.get("oldest") or "0"))
    latest = Decimal(str(args["latest"])) if args.get("latest") else None
    inclusive = _flag(args.get("inclusive"))

    def within(ts: str) -> bool:
        at = Decimal(ts)
        above = at >= oldest if inclusive else at > oldest
        below = latest is None or (at <= latest if inclusive else at < latest)
        return above and below

    selected = [m for i, m in enumerate(messages) if (keep_first and i == 0) or within(m["ts"])]
    if args.get("cursor"):
        start = base64.b64decode(str(args["cursor"])).decode().removeprefix("next_ts:")
        selected = selected[[m["ts"] for m in selected].index(start) :]
    limit = int(args.get("limit") or 100)
    page, rest = selected[:limit], selected[limit:]
    with_metadata = _flag(args.get("include_all_metadata"))
    body: dict[str, Any] = {
        "messages": [_public(m, with_metadata) for m in page],
        "has_more": bool(rest),
        "pin_count": 0,
    }
    if rest:
        cursor = base64.b64encode(f"next_ts:{rest[0]['ts']}".encode()).decode()
        body["response_metadata"] = {"next_cursor": cursor}
    return body


def _user_object(user: User, *, with_email: bool) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "real_name": user.real_name,
        "real_name_normalized": user.real_name,
        "display_name": user.display_name,
        "display_name_normalized": user.display_name,
        "team": user.team_id,
    }
    if with_email and user.email:
        profile["email"] = user.email
    return {
        "id": user.id,
        "team_id": user.team_id,
        "name": user.name,
        "deleted": False,
        "real_name": user.real_name,
        "tz": "Europe/Amsterdam",
        "tz_offset": 3600,
        "is_admin": False,
        "is_owner": False,
        "is_bot": False,
        "is_app_user": False,
        "is_restricted": False,
        "is_ultra_restricted": False,
        "is_email_confirmed": user.email is not None and user.email_confirmed,
        "updated": 1700000000,
        "profile": profile,
    }


def _bot_user_object(bot: Bot) -> dict[str, Any]:
    return {
        "id": bot.user_id,
        "team_id": bot.team_id,
        "name": bot.name,
        "deleted": False,
        "real_name": bot.name,
        "is_bot": True,
        "is_app_user": False,
        "updated": 1700000000,
        "profile": {
            "real_name": bot.name,
            "display_name": "",
            "bot_id": bot.bot_id,
            "api_app_id": bot.app_id,
            "always_active": False,
            "team": bot.team_id,
        },
    }
