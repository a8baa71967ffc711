"""A Slack DM to a role's bot is the person's conversation with the role: real slack-bolt over
real HTTP on loopback, against the fake Slack Web API. A signed message is committed once (a
retry adds nothing) and answered once in its Slack thread; a bad signature stores nothing; edits
and deletions are recorded; the same conversation is the widget's after a link; retractions
delete; rate limits are waited out; a restart between commit and post posts exactly once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.settings import make_settings
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, BOB, FakeSlack, retry_headers, url_verification
from tests.waiting import eventually
from tests.web.conftest import Widget


async def _timeline(gw: SlackGateway, person: str = "person:alice") -> list[dict[str, Any]]:
    threads = (await gw.api.get(f"/api/v1/threads?participant={person}")).body["threads"]
    if not threads:
        return []
    page = await gw.api.timeline(threads[0]["id"], f"?as={person}")
    return [e for e in page["events"] if e["kind"] in ("message", "retraction")]


MARKER = "marker"


async def _marker(gw: SlackGateway, fake_slack: FakeSlack) -> None:
    """Alice's next message, answered: what she said before it has been committed, and every
    answer to it posted, since a conversation's answers go out in order."""
    await gw.post_event(fake_slack.user_message(ALICE, MARKER))

    def answered() -> bool:
        return any(c.args["text"] == MARKER for c in fake_slack.calls("chat.postMessage", ok=True))

    await eventually(answered, what="the marker's answer posted")


def _posts(fake_slack: FakeSlack, **kw: Any) -> list[Any]:
    """The chat.postMessage calls, the marker's answer left out."""
    return [c for c in fake_slack.calls("chat.postMessage", **kw) if c.args["text"] != MARKER]


async def _said(gw: SlackGateway) -> list[dict[str, Any]]:
    """The timeline as `_timeline`, the marker and its answer left out."""
    return [e for e in await _timeline(gw) if e.get("text") != MARKER]


async def test_a_dm_is_committed_once_and_answered_once_in_its_thread(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "hello echo")
        status, _ = await gw.post_event(said)
        assert status == 200
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.args["text"] == "hello echo"
        assert post.args["thread_ts"] == said["event"]["ts"]  # in the thread of what it answers
        assert post.args["channel"] == said["event"]["channel"]

        again, _ = await gw.post_event(said, headers=retry_headers(1))  # Slack's retry
        assert again == 200
        await _marker(gw, fake_slack)
        events = await _said(gw)
        assert [(e["author"], e["text"], e["channel"]) for e in events] == [
            ("person:alice", "hello echo", "slack"),
            ("role:echo", "hello echo", None),
        ]
        assert len(_posts(fake_slack)) == 1


async def test_a_bad_or_stale_signature_is_refused_and_nothing_is_stored(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        status, _ = await gw.post_event(fake_slack.user_message(ALICE, "forged"), secret="wrong")
        assert status == 401
        assert await _timeline(gw) == []
        challenge = url_verification()
        status, body = await gw.post_event(challenge)
        assert status == 200 and challenge["challenge"] in body


async def test_edits_and_deletions_are_recorded(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "helo")
        await gw.post_event(said)
        await fake_slack.wait_for("chat.postMessage")
        channel, ts = said["event"]["channel"], said["event"]["ts"]
        unfurled = fake_slack.user_edit(channel, ts, "helo")  # Slack's own change: same text
        assert (await gw.post_event(unfurled))[0] == 200
        await gw.post_event(fake_slack.user_edit(channel, ts, "hello"))
        await fake_slack.wait_for("chat.postMessage", 2)
        events = await _timeline(gw)
        assert [e["text"] for e in events if e["author"] == "person:alice"] == ["helo", "hello"]
        edit = next(e for e in events if e["text"] == "hello" and e["author"] == "person:alice")
        original = next(e for e in events if e["text"] == "helo" and e["author"] == "person:alice")
        assert edit["context"] == {"kind": "replaces", "originating_message": original["id"]}

        await gw.post_event(fake_slack.user_delete(channel, ts))
        assert await eventually(lambda: _retracted(gw, edit["id"]))


async def _retracted(gw: SlackGateway, message_id: str) -> bool:
    return any(e["kind"] == "retraction" and e["target"] == message_id for e in await _timeline(gw))


async def test_bots_and_our_own_echoes_are_ignored(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "one")
        await gw.post_event(said)
        [post] = await fake_slack.wait_for("chat.postMessage")
        status, _ = await gw.post_event(
            fake_slack.echo(said["event"]["channel"], post.response["ts"])
        )
        assert status == 200
        await _marker(gw, fake_slack)
        assert len(await _said(gw)) == 2


async def test_the_widget_and_slack_are_one_conversation_after_a_link(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        widget = gw.widget()
        await widget.start()
        status, code, _ = await widget.call("POST", "/link-codes", {})
        assert status == 201, code
        channel = fake_slack.dm_channel(ALICE)
        await gw.post_event(fake_slack.user_message(ALICE, f"link {code['code']}"))
        [told] = await fake_slack.wait_for("chat.postMessage")
        assert told.args["text"].startswith("Linked")

        await widget.say("from the widget")  # reaches Slack quoted, and its reply too
        posts = await fake_slack.wait_for("chat.postMessage", 3)
        texts = [p.args["text"] for p in posts[1:]]
        assert "from the widget" in texts[0] and "via web" in texts[0]
        assert texts[1] == "from the widget" and posts[2].args["channel"] == channel

        await gw.post_event(fake_slack.user_message(ALICE, "from slack"))
        page = await eventually(lambda: _widget_has(widget, "from slack"))
        assert page


async def _widget_has(widget: Widget, text: str) -> bool:
    events = (await widget.history())["events"]
    return bool(sum(e.get("text") == text for e in events) == 2)  # the message and echo's reply


async def test_a_retraction_deletes_the_post(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "to be retracted")
        await gw.post_event(said)
        [post] = await fake_slack.wait_for("chat.postMessage")
        events = await _timeline(gw)
        reply = next(e for e in events if e["author"] == "role:echo")
        gone = await gw.api.post(
            f"/api/v1/threads/{reply['thread_id']}/messages/{reply['id']}/retract",
            {"author": "role:echo"},
        )
        assert gone.status == 201, gone.text
        [deleted] = await fake_slack.wait_for("chat.delete")
        assert deleted.args["ts"] == post.response["ts"]
        assert fake_slack.message(said["event"]["channel"], post.response["ts"]) is None


async def test_a_rate_limited_post_is_retried_after_retry_after_and_posted_once(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.rate_limit("chat.postMessage", times=1, retry_after=1)
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await gw.post_event(fake_slack.user_message(ALICE, "patience"))
        calls = await fake_slack.wait_for("chat.postMessage", 2, within=10)
        assert [c.status for c in calls] == [429, 200]
        assert calls[1].at - calls[0].at >= 1.0  # it waited as told
        await _marker(gw, fake_slack)
        assert len(_posts(fake_slack, ok=True)) == 1


async def test_a_post_that_timed_out_is_not_posted_twice(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.delay("chat.postMessage", 12, times=1)  # longer than the client waits
    async with slack_gateway(tmp_path, fake_slack) as gw:
        said = fake_slack.user_message(ALICE, "slow slack")
        await gw.post_event(said)
        await fake_slack.wait_for("conversations.replies", within=20)
        await _marker(gw, fake_slack)
        posted = [m for m in fake_slack.messages(said["event"]["channel"]) if m.get("bot_id")]
        assert [m["text"] for m in posted if m["text"] != MARKER] == ["slow slack"]


async def test_a_restart_between_commit_and_post_posts_exactly_once(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.fail("chat.postMessage", "internal_error", times=None)  # Slack is down
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await gw.post_event(fake_slack.user_message(ALICE, "survive this"))
        await fake_slack.wait_for("chat.postMessage")
        events = await eventually(lambda: _has_reply(gw))
        assert events
    assert fake_slack.calls("chat.postMessage", ok=True) == []
    fake_slack.clear_faults()
    async with slack_gateway(tmp_path, fake_slack) as gw:  # the same database, started again
        await fake_slack.wait_for("chat.postMessage", ok=True)
        await _marker(gw, fake_slack)
        assert [c.args["text"] for c in _posts(fake_slack, ok=True)] == ["survive this"]


async def _has_reply(gw: SlackGateway) -> bool:
    return any(e["author"] == "role:echo" for e in await _timeline(gw))


async def test_help_and_new_are_commands(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await gw.post_event(fake_slack.user_message(ALICE, "hello"))
        await fake_slack.wait_for("chat.postMessage")
        await gw.post_event(fake_slack.user_message(ALICE, "help"))
        posts = await fake_slack.wait_for("chat.postMessage", 2)
        assert "`new` starts fresh" in posts[1].args["text"]
        await gw.post_event(fake_slack.user_message(ALICE, "new"))
        posts = await fake_slack.wait_for("chat.postMessage", 3)
        assert "fresh session" in posts[2].args["text"]
        texts = [e["text"] for e in await _timeline(gw)]
        assert "help" not in texts and "new" not in texts


async def test_socket_mode_receives_and_acknowledges(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack, mode="socket") as gw:
        await fake_slack.wait_for_socket()
        envelope = await fake_slack.socket_send_event(fake_slack.user_message(ALICE, "by socket"))
        await fake_slack.socket_ack(envelope)
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.args["text"] == "by socket"
        assert [e["text"] for e in await _timeline(gw)] == ["by socket", "by socket"]


async def test_a_group_dm_is_the_thread_of_all_its_people_and_the_role(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        group = fake_slack.mpim_channel(ALICE, BOB)
        await gw.post_event(fake_slack.user_message(ALICE, "hello both", channel=group))
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.args["channel"] == group and post.args["text"] == "hello both"
        threads = (await gw.api.get("/api/v1/threads?participant=person:bob")).body["threads"]
        [thread] = threads
        members = {p["address"] for p in thread["participants"]}
        assert members == {"person:alice", "person:bob", "role:echo"}


async def test_the_dm_shows_the_role_working_while_a_long_turn_runs(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, delay_ms=1_500) as gw:
        said = fake_slack.user_message(ALICE, "are you there?")
        await gw.post_event(said)
        calls = await fake_slack.wait_for("assistant.threads.setStatus", 2, within=10)
        assert [c.args["status"] for c in calls] == ["Echo is working…", ""]
        assert {c.args["thread_ts"] for c in calls} == {said["event"]["ts"]}
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert calls[0].at < post.at


async def test_a_quick_turn_shows_no_status(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await gw.post_event(fake_slack.user_message(ALICE, "quick"))
        await fake_slack.wait_for("chat.postMessage")
        await asyncio.sleep(1.5)
        assert fake_slack.calls("assistant.threads.setStatus") == []


def test_a_slack_apps_settings_come_from_the_environment_by_the_names_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.model.roles import ManifestError, Role
    from gateway.app import build_app
    from tests.api.conftest import TOKEN
    from tests.slack.dm_gateway import BOT, SIGNING, echo_role

    settings = make_settings(tmp_path)
    monkeypatch.setenv(SIGNING, "s" * 32)
    monkeypatch.delenv(BOT, raising=False)
    with pytest.raises(ManifestError, match=f"slack.bot_token: the setting {BOT} is not set"):
        build_app(settings, api_token=TOKEN, roles={"echo": echo_role()})
    monkeypatch.setenv(BOT, "xoxb-from-the-environment")
    build_app(settings, api_token=TOKEN, roles={"echo": echo_role()})

    oauth = Role.model_validate(
        echo_role().model_dump()
        | {
            "slack": {
                "signing_secret": SIGNING,
                "client_id": "ECHO_ID",
                "client_secret": "ECHO_SEC",
            }
        }
    )
    monkeypatch.setenv("ECHO_ID", "1.2")
    monkeypatch.setenv("ECHO_SEC", "client-secret")
    build_app(settings, api_token=TOKEN, roles={"echo": oauth})


async def test_a_reply_written_word_by_word_streams_and_is_one_message(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, stream=True) as gw:
        said = fake_slack.user_message(ALICE, "one two three")
        await gw.post_event(said)
        [start] = await fake_slack.wait_for("chat.startStream")
        assert start.args["thread_ts"] == said["event"]["ts"]
        appended = await fake_slack.wait_for("chat.appendStream", 2)
        [stop] = await fake_slack.wait_for("chat.stopStream")
        assert [start.args["markdown_text"]] + [a.args["markdown_text"] for a in appended] == [
            "one ",
            "two ",
            "three",
        ]
        ts = start.response["ts"]
        assert stop.args["ts"] == ts and not fake_slack.is_streaming(said["event"]["channel"], ts)
        message = fake_slack.message(said["event"]["channel"], ts)
        assert message is not None and message["text"] == "one two three"
        # the streamed message stands for the reply: retracting the reply deletes it
        reply = next(e for e in await _timeline(gw) if e["author"] == "role:echo")
        gone = await gw.api.post(
            f"/api/v1/threads/{reply['thread_id']}/messages/{reply['id']}/retract",
            {"author": "role:echo"},
        )
        assert gone.status == 201
        [deleted] = await fake_slack.wait_for("chat.delete")
        assert deleted.args["ts"] == ts
        # the reply's retraction went out after it: exactly one message was ever the reply's
        assert fake_slack.calls("chat.postMessage") == []
