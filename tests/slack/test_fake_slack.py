"""The fake Slack answers the real slack_sdk and slack_bolt clients as Slack would.

Every test drives the fake with the real SDK (`AsyncWebClient`, `SocketModeClient`,
`SignatureVerifier`) or a real Bolt `AsyncApp`, so that the adapter's tests can trust it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import pytest
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from tests.slack.fake_slack import (
    ALICE,
    BOB,
    Bot,
    FakeSlack,
    User,
    bot_message,
    event_callback,
    interactivity_body,
    message_im,
    signed_request_headers,
)


async def refused(call: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as caught:
        await call
    return caught.value


# -- the Web API -----------------------------------------------------------------------------


async def test_post_reply_update_and_read_back(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    dm = fake_slack.dm_channel(ALICE)
    opened = await slack_client.conversations_open(users=ALICE.id)
    assert opened["channel"]["id"] == dm and opened["already_open"] is True

    metadata = {"event_type": "rolecall_message", "event_payload": {"event_id": "e1"}}
    top = await slack_client.chat_postMessage(channel=dm, text="hello", metadata=metadata)
    assert top["ok"] and top["channel"] == dm and top["ts"] == "1700000000.000100"
    assert top["message"]["text"] == "hello" and top["message"]["bot_id"] == fake_slack.bot.bot_id
    reply = await slack_client.chat_postMessage(channel=dm, text="in thread", thread_ts=top["ts"])
    assert reply["ts"] > top["ts"] and reply["message"]["thread_ts"] == top["ts"]

    edited = await slack_client.chat_update(channel=dm, ts=top["ts"], text="hello again")
    assert edited["text"] == "hello again" and edited["message"]["edited"]["user"] == "U0FAKEBOT1"

    plain = await slack_client.conversations_history(channel=dm)
    assert [m["text"] for m in plain["messages"]] == ["hello again"]  # replies are not in history
    assert "metadata" not in plain["messages"][0] and plain["messages"][0]["reply_count"] == 1
    full = await slack_client.conversations_history(channel=dm, include_all_metadata=True)
    assert full["messages"][0]["metadata"] == metadata
    thread = await slack_client.conversations_replies(channel=dm, ts=top["ts"])
    assert [m["text"] for m in thread["messages"]] == ["hello again", "in thread"]

    call = fake_slack.calls("chat.postMessage")[0]
    assert call.ok and call.token == fake_slack.bot.token
    assert call.args == {"channel": dm, "text": "hello", "metadata": metadata}
    assert call.headers["Authorization"] == f"Bearer {fake_slack.bot.token}"
    assert [c.method for c in fake_slack.calls()][-3:] == [
        "conversations.history",
        "conversations.history",
        "conversations.replies",
    ]


async def test_history_pages_newest_first_within_oldest(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    dm = fake_slack.dm_channel(ALICE)
    sent = [(await slack_client.chat_postMessage(channel=dm, text=f"m{i}"))["ts"] for i in range(5)]

    first = await slack_client.conversations_history(channel=dm, oldest=sent[0], limit=2)
    assert [m["ts"] for m in first["messages"]] == [sent[4], sent[3]] and first["has_more"]
    cursor = first["response_metadata"]["next_cursor"]
    second = await slack_client.conversations_history(
        channel=dm, oldest=sent[0], limit=2, cursor=cursor
    )
    assert [m["ts"] for m in second["messages"]] == [sent[2], sent[1]]
    assert second["has_more"] is False


async def test_delete_or_its_refusal_then_update_instead(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    dm = fake_slack.dm_channel(ALICE)
    first = await slack_client.chat_postMessage(channel=dm, text="one")
    second = await slack_client.chat_postMessage(channel=dm, text="two")

    assert (await slack_client.chat_delete(channel=dm, ts=first["ts"]))["ok"]
    assert fake_slack.message(dm, first["ts"]) is None
    gone = await refused(slack_client.chat_delete(channel=dm, ts=first["ts"]))
    assert gone.response["error"] == "message_not_found"

    fake_slack.fail("chat.delete", "cant_delete_message")
    refusal = await refused(slack_client.chat_delete(channel=dm, ts=second["ts"]))
    assert refusal.response["error"] == "cant_delete_message"
    await slack_client.chat_update(channel=dm, ts=second["ts"], text="(retracted)")
    assert fake_slack.message(dm, second["ts"])["text"] == "(retracted)"  # type: ignore[index]
    assert [c.ok for c in fake_slack.calls("chat.delete")] == [True, False, False]

    person = fake_slack.user_message(ALICE, "mine")["event"]
    theirs = await refused(slack_client.chat_delete(channel=dm, ts=person["ts"]))
    assert theirs.response["error"] == "cant_delete_message"


async def test_tokens_channels_and_methods_are_checked(fake_slack: FakeSlack) -> None:
    dm = fake_slack.dm_channel(ALICE)
    wrong = AsyncWebClient(token="xoxb-wrong", base_url=fake_slack.api_url)
    assert (await refused(wrong.auth_test())).response["error"] == "invalid_auth"
    anonymous = AsyncWebClient(base_url=fake_slack.api_url)
    assert (await refused(anonymous.auth_test())).response["error"] == "not_authed"
    app_level = AsyncWebClient(token=fake_slack.app.app_token, base_url=fake_slack.api_url)
    refusal = await refused(app_level.chat_postMessage(channel=dm, text="x"))
    assert refusal.response["error"] == "not_allowed_token_type"

    other = Bot(token="xoxb-other", app_id="A0OTHERAPP", user_id="U0OTHERBOT", bot_id="B0OTHER")
    fake_slack.add_bot(other)
    other_client = AsyncWebClient(token=other.token, base_url=fake_slack.api_url)
    foreign = await refused(other_client.chat_postMessage(channel=dm, text="x"))
    assert foreign.response["error"] == "channel_not_found"
    own = await other_client.chat_postMessage(channel=ALICE.id, text="hi")  # a user id: the DM
    assert own["channel"] == fake_slack.dm_channel(ALICE, bot=other) != dm

    unknown = await refused(other_client.api_call("chat.frobnicate"))
    assert unknown.response.status_code == 404
    assert unknown.response["error"] == "unknown_method"


async def test_group_dm_and_a_fault_that_lasts(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    opened = await slack_client.conversations_open(users=f"{ALICE.id},{BOB.id}")
    group = opened["channel"]["id"]
    assert group == fake_slack.mpim_channel(ALICE, BOB) != fake_slack.dm_channel(ALICE)
    said = fake_slack.user_message(BOB, "hi all", channel=group)
    assert said["event"]["channel_type"] == "mpim" and said["event"]["user"] == BOB.id

    fake_slack.fail("chat.postMessage", "fatal_error", times=None)
    for _ in range(2):
        refusal = await refused(slack_client.chat_postMessage(channel=group, text="lost"))
        assert refusal.response["error"] == "fatal_error"
    fake_slack.clear_faults()
    await slack_client.chat_postMessage(channel=group, text="now")
    history = await slack_client.conversations_history(channel=group)
    assert [m["text"] for m in history["messages"]] == ["now", "hi all"]


async def test_users_info_and_scopes(fake_slack: FakeSlack, slack_client: AsyncWebClient) -> None:
    alice = (await slack_client.users_info(user=ALICE.id))["user"]
    assert (alice["id"], alice["team_id"], alice["real_name"]) == (
        ALICE.id,
        "T0FAKETEAM",
        "Alice Adams",
    )
    assert alice["profile"]["display_name"] == "alice"
    assert alice["profile"]["email"] == "alice@example.com"
    assert alice["is_email_confirmed"] is True
    unconfirmed = User(
        id="U0CAROL001",
        name="carol",
        real_name="Carol",
        email="c@example.com",
        email_confirmed=False,
    )
    fake_slack.add_user(unconfirmed)
    carol = (await slack_client.users_info(user=unconfirmed.id))["user"]
    assert (carol["profile"]["email"], carol["is_email_confirmed"]) == ("c@example.com", False)
    bot_user = (await slack_client.users_info(user=fake_slack.bot.user_id))["user"]
    assert bot_user["is_bot"] and bot_user["profile"]["bot_id"] == fake_slack.bot.bot_id
    missing = await refused(slack_client.users_info(user="U0NOBODY01"))
    assert missing.response["error"] == "user_not_found"

    scoped = Bot(token="xoxb-scoped", scopes=frozenset({"users:read", "im:history"}))
    fake_slack.add_bot(scoped)
    client = AsyncWebClient(token=scoped.token, base_url=fake_slack.api_url)
    assert "email" not in (await client.users_info(user=BOB.id))["user"]["profile"]
    refusal = await refused(client.chat_postMessage(channel=BOB.id, text="x"))
    assert (refusal.response["error"], refusal.response["needed"]) == (
        "missing_scope",
        "chat:write",
    )


async def test_status_is_set_and_cleared_by_a_reply(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    asked = fake_slack.user_message(ALICE, "question?")["event"]
    dm, ts = asked["channel"], asked["ts"]
    await slack_client.assistant_threads_setStatus(
        channel_id=dm, thread_ts=ts, status="is thinking…"
    )
    assert fake_slack.status(dm, ts) == "is thinking…"
    await slack_client.chat_postMessage(channel=dm, thread_ts=ts, text="answer")
    assert fake_slack.status(dm, ts) == ""
    assert fake_slack.message(dm, ts)["reply_users"] == [fake_slack.bot.user_id]  # type: ignore[index]


async def test_sdk_chat_stream_makes_one_message(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    asked = fake_slack.user_message(ALICE, "tell me a story")["event"]
    stream = await slack_client.chat_stream(
        channel=asked["channel"], thread_ts=asked["ts"], buffer_size=5
    )
    await stream.append(markdown_text="Once upon ")
    await stream.append(markdown_text="a time")
    assert stream.ts is not None and fake_slack.is_streaming(asked["channel"], stream.ts)
    stopped = await stream.stop(markdown_text=".")

    assert stopped["message"]["text"] == "Once upon a time."
    assert [c.method for c in fake_slack.calls() if c.method.startswith("chat.")] == [
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    ]
    replies = fake_slack.messages(asked["channel"])[1:]
    assert [m["text"] for m in replies] == ["Once upon a time."]
    late = await refused(slack_client.chat_appendStream(channel=asked["channel"], ts=stream.ts))
    assert late.response["error"] == "message_not_in_streaming_state"


# slack_sdk 3.48 sends the OAuth client's credentials with aiohttp's deprecated `BasicAuth`.
@pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning")
async def test_oauth_install_and_token_rotation() -> None:
    async with FakeSlack(token_rotation=True) as fake:
        installed = Bot(token="xoxe.xoxb-1-installed", team_id="T0SECOND01", user_id="U0BOT00002")
        fake.add_oauth_code("the-code", installed)
        client = AsyncWebClient(base_url=fake.api_url)
        app = fake.app
        answer = await client.oauth_v2_access(
            client_id=app.client_id, client_secret=app.client_secret, code="the-code"
        )
        assert (answer["access_token"], answer["team"]["id"]) == (installed.token, "T0SECOND01")
        assert answer["authed_user"]["id"] == ALICE.id and answer["expires_in"] == 43200
        reused = await refused(
            client.oauth_v2_access(
                client_id=app.client_id, client_secret=app.client_secret, code="the-code"
            )
        )
        assert reused.response["error"] == "invalid_code"

        rotated = await client.oauth_v2_access(
            client_id=app.client_id,
            client_secret=app.client_secret,
            grant_type="refresh_token",
            refresh_token=answer["refresh_token"],
        )
        assert rotated["access_token"] != installed.token
        fresh = AsyncWebClient(token=rotated["access_token"], base_url=fake.api_url)
        assert (await fresh.auth_test())["team_id"] == "T0SECOND01"
        fake.expire_token(installed.token)
        stale = AsyncWebClient(token=installed.token, base_url=fake.api_url)
        assert (await refused(stale.auth_test())).response["error"] == "token_expired"


# -- waiting and faults ------------------------------------------------------------------------


async def test_wait_for_counts_calls_or_says_what_came(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    dm = fake_slack.dm_channel(BOB)

    async def later() -> None:
        await asyncio.sleep(0.05)
        await slack_client.chat_postMessage(channel=dm, text="late")

    task = asyncio.create_task(later())
    calls = await fake_slack.wait_for("chat.postMessage", ok=True)
    assert [c.args["text"] for c in calls] == ["late"]
    await task
    with pytest.raises(TimeoutError, match=r"2 chat\.postMessage"):
        await fake_slack.wait_for("chat.postMessage", 2, within=0.1)


async def test_rate_limit_is_retried_by_the_sdk_and_posted_once(fake_slack: FakeSlack) -> None:
    dm = fake_slack.dm_channel(ALICE)
    bare = AsyncWebClient(token=fake_slack.bot.token, base_url=fake_slack.api_url)
    fake_slack.rate_limit("chat.postMessage", retry_after=1)
    limited = await refused(bare.chat_postMessage(channel=dm, text="hi"))
    assert limited.response.status_code == 429 and limited.response["error"] == "ratelimited"
    assert limited.response.headers["Retry-After"] == "1"

    retrying = AsyncWebClient(
        token=fake_slack.bot.token,
        base_url=fake_slack.api_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    fake_slack.rate_limit("chat.postMessage", retry_after=1)
    started = time.monotonic()
    assert (await retrying.chat_postMessage(channel=dm, text="hello"))["ok"]

    first, second = fake_slack.calls("chat.postMessage")[1:]
    assert (first.status, second.status) == (429, 200)
    assert second.at - first.at >= 1.0 and time.monotonic() - started >= 1.0
    assert [m["text"] for m in fake_slack.messages(dm)] == ["hello"]


async def test_an_answer_late_beyond_the_timeout_has_still_posted(fake_slack: FakeSlack) -> None:
    dm = fake_slack.dm_channel(ALICE)
    impatient = AsyncWebClient(token=fake_slack.bot.token, base_url=fake_slack.api_url, timeout=1)
    fake_slack.delay("chat.postMessage", 30)
    with pytest.raises(TimeoutError):
        await impatient.chat_postMessage(channel=dm, text="did it go?")

    [call] = fake_slack.calls("chat.postMessage")
    assert call.ok and call.delayed == 30
    patient = AsyncWebClient(token=fake_slack.bot.token, base_url=fake_slack.api_url)
    history = await patient.conversations_history(channel=dm)
    assert [m["text"] for m in history["messages"]] == ["did it go?"]


# -- inbound: signing, events, Socket Mode ---------------------------------------------------------


def test_signed_headers_satisfy_the_sdk_verifier() -> None:
    body = json.dumps(event_callback({"type": "app_mention"}, team_id="T1", api_app_id="A1"))
    headers = signed_request_headers(body.encode(), "s3cret")
    verifier = SignatureVerifier("s3cret")
    assert verifier.is_valid_request(body, headers)
    assert not verifier.is_valid_request(body + " ", headers)
    assert not SignatureVerifier("other").is_valid_request(body, headers)
    stale = signed_request_headers(body.encode(), "s3cret", timestamp=int(time.time()) - 600)
    assert not verifier.is_valid_request(body, stale)


def bolt_app(fake: FakeSlack, heard: list[dict[str, Any]]) -> AsyncApp:
    app = AsyncApp(
        process_before_response=True,  # listeners finish before the dispatch returns
        token=fake.bot.token,
        signing_secret=fake.app.signing_secret,
        client=AsyncWebClient(token=fake.bot.token, base_url=fake.api_url),
    )

    @app.event("message")
    async def on_message(event: dict[str, Any], say: Any) -> None:
        heard.append(event)
        if "subtype" not in event:
            await say(text=f"heard: {event['text']}", thread_ts=event["ts"])

    return app


async def dispatch(app: AsyncApp, payload: dict[str, Any], secret: str) -> int:
    body = json.dumps(payload)
    headers: dict[str, str | Sequence[str]] = {"Content-Type": "application/json"}
    headers.update(signed_request_headers(body.encode(), secret))
    response = await app.async_dispatch(AsyncBoltRequest(body=body, headers=headers))
    return response.status


async def test_bolt_accepts_the_built_events_and_answers_through_the_fake(
    fake_slack: FakeSlack,
) -> None:
    heard: list[dict[str, Any]] = []
    app = bolt_app(fake_slack, heard)
    secret = fake_slack.app.signing_secret

    asked = fake_slack.user_message(ALICE, "hello")
    assert await dispatch(app, asked, secret) == 200
    [reply] = await fake_slack.wait_for("chat.postMessage", ok=True)
    dm = asked["event"]["channel"]
    assert reply.args["channel"] == dm and reply.args["thread_ts"] == asked["event"]["ts"]
    assert asked["event"]["channel_type"] == "im" and dm.startswith("D")

    echo = fake_slack.echo(dm, reply.response["ts"])
    edit = fake_slack.user_edit(dm, asked["event"]["ts"], "hello, edited")
    deletion = fake_slack.user_delete(dm, asked["event"]["ts"])
    other_bot = bot_message(text="beep", channel=dm, ts=fake_slack.next_ts(), bot_id="B0ELSE")
    for payload in (echo, edit, deletion, fake_slack.event_payload(other_bot)):
        assert await dispatch(app, payload, secret) == 200
    assert await dispatch(app, fake_slack.user_message(BOB, "x"), "not-the-secret") == 401

    subtypes = [e.get("subtype") for e in heard]
    assert subtypes == [None, "message_changed", "message_deleted", "bot_message"]
    assert heard[1]["message"]["text"] == "hello, edited"
    assert heard[2]["deleted_ts"] == asked["event"]["ts"]
    assert fake_slack.message(dm, asked["event"]["ts"]) is None
    assert len(fake_slack.calls("chat.postMessage")) == 1  # the echo was Bolt's own: ignored


async def test_a_click_is_what_bolt_takes_and_an_ephemeral_is_kept_apart(
    fake_slack: FakeSlack, slack_client: AsyncWebClient
) -> None:
    dm = fake_slack.dm_channel(ALICE)
    button = {"type": "button", "action_id": "go:1", "value": "1", "style": "primary"}
    blocks = [{"type": "actions", "block_id": "b1", "elements": [button]}]
    posted = await slack_client.chat_postMessage(channel=dm, text="Go?", blocks=blocks)
    ts = posted["ts"]
    with pytest.raises(AssertionError, match="no button 'go:2'"):
        fake_slack.click(ALICE, dm, ts, "go:2")
    click = fake_slack.click(ALICE, dm, ts, "go:1")
    assert (click["type"], click["user"]["id"], click["channel"]["id"]) == (
        "block_actions",
        ALICE.id,
        dm,
    )
    assert click["container"]["message_ts"] == ts and click["message"]["blocks"] == blocks

    clicked: list[dict[str, Any]] = []
    app = AsyncApp(
        process_before_response=True,
        token=fake_slack.bot.token,
        signing_secret=fake_slack.app.signing_secret,
        client=AsyncWebClient(token=fake_slack.bot.token, base_url=fake_slack.api_url),
    )

    @app.action("go:1")
    async def on_click(ack: Any, action: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        clicked.append(action)
        await client.chat_postEphemeral(channel=dm, user=ALICE.id, text="only you see this")

    body = interactivity_body(click).decode()
    headers: dict[str, str | Sequence[str]] = {
        "Content-Type": "application/x-www-form-urlencoded",
        **signed_request_headers(body.encode(), fake_slack.app.signing_secret),
    }
    answer = await app.async_dispatch(AsyncBoltRequest(body=body, headers=headers))
    assert answer.status == 200
    assert [(a["action_id"], a["value"], a["block_id"]) for a in clicked] == [("go:1", "1", "b1")]
    [told] = fake_slack.ephemerals
    assert (told["channel"], told["user"], told["text"]) == (dm, ALICE.id, "only you see this")
    assert [m["ts"] for m in fake_slack.messages(dm)] == [ts]  # not in the DM's history
    refused_ = await refused(slack_client.chat_postEphemeral(channel=dm, user=BOB.id, text="x"))
    assert refused_.response["error"] == "user_not_in_channel"


async def test_socket_mode_client_connects_receives_and_acks(fake_slack: FakeSlack) -> None:
    received: list[SocketModeRequest] = []

    async def listener(client: Any, request: SocketModeRequest) -> None:
        received.append(request)
        await client.send_socket_mode_response(SocketModeResponse(request.envelope_id))

    client = SocketModeClient(
        app_token=fake_slack.app.app_token,
        web_client=AsyncWebClient(base_url=fake_slack.api_url),
        auto_reconnect_enabled=False,
    )
    client.socket_mode_request_listeners.append(listener)
    try:
        await client.connect()  # type: ignore[no-untyped-call]  # slack_sdk leaves it unannotated
        connection = await fake_slack.wait_for_socket()
        assert connection.sent[0]["type"] == "hello"
        [opened] = fake_slack.calls("apps.connections.open")
        assert opened.ok and opened.token == fake_slack.app.app_token
        assert opened.response["url"].startswith(f"ws://127.0.0.1:{fake_slack.port}/socket/")

        payload = fake_slack.user_message(ALICE, "over the socket")
        envelope_id = await fake_slack.socket_send_event(payload)
        assert await fake_slack.socket_ack(envelope_id) == {"envelope_id": envelope_id}
        [request] = received
        assert request.type == "events_api" and request.payload == payload

        await fake_slack.socket_disconnect()
        second = await fake_slack.wait_for("apps.connections.open", 2)
        assert all(call.ok for call in second)
        newer = await fake_slack.wait_for_socket(newer_than=connection.number)
        assert newer.sent[0]["type"] == "hello" and connection.closed
    finally:
        await client.close()  # type: ignore[no-untyped-call]  # slack_sdk leaves it unannotated


async def test_bolt_socket_mode_handler_answers_an_event(fake_slack: FakeSlack) -> None:
    heard: list[dict[str, Any]] = []
    handler = AsyncSocketModeHandler(
        bolt_app(fake_slack, heard),
        fake_slack.app.app_token,
        web_client=AsyncWebClient(base_url=fake_slack.api_url),
    )
    await handler.connect_async()  # type: ignore[no-untyped-call]  # slack_bolt: unannotated
    try:
        event = message_im(
            user=ALICE.id,
            text="hi bolt",
            channel=fake_slack.dm_channel(ALICE),
            ts=fake_slack.next_ts(),
            team=ALICE.team_id,
        )
        payload = event_callback(event, team_id=ALICE.team_id, api_app_id=fake_slack.app.app_id)
        envelope_id = await fake_slack.socket_send_event(payload)
        await fake_slack.socket_ack(envelope_id)
        [reply] = await fake_slack.wait_for("chat.postMessage")
        assert reply.args["text"] == "heard: hi bolt"
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]  # slack_bolt: unannotated
