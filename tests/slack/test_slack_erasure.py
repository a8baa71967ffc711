"""Erasing a person reaches their Slack DM (channels/slack/delivery.py, docs/privacy.md): the real
slack-bolt against the fake Slack Web API, on SQLite and PostgreSQL. Every post the gateway made
for Alice's conversation — the role's replies, the quoted copy of what she said elsewhere, an
approval's request — is deleted with `chat.delete` (one gone already answers `message_not_found`:
done), her own Slack messages stay (a bot token cannot delete them), the gateway forgets the posts
and the DM's binding, and the same Slack user who writes again is a new person in a new
conversation, answered in the same DM. In a group DM only the posts of her messages go; the
others' conversation goes on there. A crash in the middle of the deletions is finished on
restart. The deletions are traced under the erasure's commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from channels.edge.requests import DATABASE_KEY
from core.model.participants import Address
from core.model.timeline import ThreadId
from core.storage.database import Database, open_database
from tests.approvals import restart_request
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, BOB, TEAM_ID, FakeSlack, signed_request_headers
from tests.slack.served import served
from tests.spans import Recorded
from tests.waiting import eventually

ECHO = "role:echo"


def _ours(fake: FakeSlack, channel: str) -> list[dict[str, Any]]:
    """The gateway's posts in the channel now."""
    return [m for m in fake.messages(channel) if m.get("bot_id") == fake.bot.bot_id]


def _deleted(fake: FakeSlack) -> set[str]:
    """The ts of every post Slack deleted."""
    return {str(c.args["ts"]) for c in fake.calls("chat.delete", ok=True)}


async def _threads(gw: SlackGateway, participant: str) -> list[dict[str, Any]]:
    reply = await gw.api.get(f"/api/v1/threads?participant={participant}")
    assert reply.status == 200, reply.text
    threads: list[dict[str, Any]] = reply.body["threads"]
    return threads


async def _posted(fake: FakeSlack, channel: str, count: int) -> list[dict[str, Any]]:
    def posted() -> list[dict[str, Any]] | None:
        ours = _ours(fake, channel)
        return ours if len(ours) >= count else None

    return await eventually(posted, what=f"{count} posts of ours in {channel}")


async def test_erasing_alice_deletes_our_posts_in_her_dm_and_her_next_message_starts_anew(
    tmp_path: Path, fake_slack: FakeSlack, slack_client: AsyncWebClient, database_url: str
) -> None:
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        db: Database = gw.server.app[DATABASE_KEY]
        said = fake_slack.user_message(ALICE, "my locker is 42")
        assert (await gw.post_event(said))[0] == 200
        dm = said["event"]["channel"]
        await _posted(fake_slack, dm, 1)  # the reply, in the thread of what she said
        [thread] = await _threads(gw, "person:alice")
        thread_id = ThreadId(thread["id"])
        await gw.api.say(thread_id, "person:alice", "and my bike is blue")  # quoted in the DM
        await _posted(fake_slack, dm, 3)  # ... and answered
        await db.approvals.request(thread_id, "run1", Address(ECHO), restart_request())
        ours = await _posted(fake_slack, dm, 4)
        assert "Restart the web service?" in ours[-1]["text"]
        gone_before = ours[0]["ts"]  # deleted already: erasing finds it gone, and goes on
        assert (await slack_client.chat_delete(channel=dm, ts=gone_before))["ok"]

        went = await db.erasure.erase("alice")
        assert went.slack_posts == 4

        posts = {m["ts"] for m in ours}
        await eventually(lambda: posts <= _deleted(fake_slack), what="every post of ours deleted")
        assert _ours(fake_slack, dm) == []
        # Her own message stays: Slack lets only her (a user token) delete it.
        assert [m["text"] for m in fake_slack.messages(dm)] == ["my locker is 42"]
        refused = [c for c in fake_slack.calls("chat.delete") if not c.ok]
        assert [(c.args["ts"], c.response["error"]) for c in refused] == [
            (gone_before, "message_not_found")
        ]

        async def unbound() -> bool:
            return await db.slack.thread_of("echo", TEAM_ID, dm) is None

        await eventually(unbound, what="the DM no longer bound to the erased conversation")
        erasure = await db.slack.erasure_of("echo", thread_id)
        assert erasure.nothing  # no post, no delivery record, no binding left of it

        # The same Slack user writes again: someone new, in a new conversation, in the same DM.
        again = fake_slack.user_message(ALICE, "hello again")
        assert (await gw.post_event(again))[0] == 200
        [reply] = await _posted(fake_slack, dm, 1)
        assert reply["text"] == "hello again" and reply["thread_ts"] == again["event"]["ts"]
        threads = await _threads(gw, ECHO)
        assert len(threads) == 2
        [new] = [t for t in threads if t["id"] != thread_id]
        [person] = [p["address"] for p in new["participants"] if p["address"] != ECHO]
        assert person != "person:alice"
        assert await db.slack.thread_of("echo", TEAM_ID, dm) == new["id"]
        assert _deleted(fake_slack) == posts  # nothing of the new conversation was deleted
        timeline = await gw.api.timeline(thread_id)
        assert [e["kind"] for e in timeline["events"]][-1] == "erased"  # nothing came after it


async def test_in_a_group_dm_only_the_posts_of_her_messages_go(
    tmp_path: Path, fake_slack: FakeSlack, database_url: str
) -> None:
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        db: Database = gw.server.app[DATABASE_KEY]
        group = fake_slack.mpim_channel(ALICE, BOB)
        await gw.post_event(fake_slack.user_message(BOB, "hello both", channel=group))
        await _posted(fake_slack, group, 1)
        [thread] = await _threads(gw, "person:bob")
        thread_id = ThreadId(thread["id"])
        quoted = await gw.api.say(thread_id, "person:alice", "Alice from the API")
        ours = await _posted(fake_slack, group, 3)  # Bob's answer, Alice's words, their answer
        [copy] = [m for m in ours if "Alice from the API" in m["text"] and "via api" in m["text"]]

        await db.erasure.erase("alice")

        await eventually(lambda: _deleted(fake_slack) == {copy["ts"]}, what="her quoted words")

        async def forgotten() -> bool:
            return await db.slack.post_of("echo", quoted["id"]) is None

        await eventually(forgotten, what="the post of her words forgotten")
        # The group goes on in the same group DM — with Alice's Slack user as someone new: the
        # group DM is the thread of all its people.
        await gw.post_event(fake_slack.user_message(BOB, "still here", channel=group))
        await eventually(
            lambda: any(m["text"] == "still here" for m in _ours(fake_slack, group)),
            what="Bob answered in the group DM",
        )
        kept = {m["ts"] for m in ours} - {copy["ts"]}
        assert kept <= {m["ts"] for m in _ours(fake_slack, group)}  # the others' posts stay
        assert _deleted(fake_slack) == {copy["ts"]}
        now = await db.slack.thread_of("echo", TEAM_ID, group)
        assert now is not None and now != thread_id
        members = (await db.threads.get(now)).addresses
        assert "person:bob" in members and "person:alice" not in members and len(members) == 3


async def test_the_deletions_are_traced_in_the_trace_of_the_erasure(
    tmp_path: Path, fake_slack: FakeSlack, recorded: Recorded
) -> None:
    provider = recorded.provider
    async with slack_gateway(tmp_path, fake_slack, tracer_provider=provider) as gw:
        said = fake_slack.user_message(ALICE, "my locker is 42")
        await gw.post_event(said)
        [post] = await _posted(fake_slack, said["event"]["channel"], 1)
        erased = await gw.api.call("DELETE", "/api/v1/persons/alice?erase=true")
        assert erased.status == 200, erased.text
        await eventually(lambda: post["ts"] in _deleted(fake_slack), what="the reply deleted")
        [thread] = await _threads(gw, ECHO)
    span = recorded.one("rolecall.slack.erase")
    assert span.attributes is not None
    assert span.attributes["rolecall.role"] == "echo"
    assert span.attributes["rolecall.thread_id"] == thread["id"]
    chain = recorded.chain(span)  # under the erasure's commit, in the operator's request
    assert chain[0] == "rolecall.commit" and chain[-1] == "DELETE /api/v1/persons/{slug}"


MANIFEST = """\
name: echo
display_name: Echo
runtime: {kind: builtin, agent: echo}
slack: {mode: http, bot_token: SLACK_ECHO_BOT_TOKEN, signing_secret: SLACK_ECHO_SIGNING_SECRET}
"""
HELD = 120.0
"""Seconds the fake holds the answer to a deletion (the gateway is killed long before)."""


async def test_a_crash_while_deleting_is_finished_on_restart(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack
) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "echo.yaml").write_text(MANIFEST)
    settings = {
        "ROLECALL_ROLES_DIR": str(roles),
        "ROLECALL_API_TOKEN": "erasure-crash-operator-token-0123456789",
        "ROLECALL_DATABASE_URL": database_url,
        "ROLECALL_SLACK_API_URL": fake_slack.api_url,
        "ROLECALL_SLACK_PACE": "0",
        "SLACK_ECHO_BOT_TOKEN": fake_slack.bot.token,
        "SLACK_ECHO_SIGNING_SECRET": fake_slack.app.signing_secret,
    }
    var, dm = tmp_path / "var", fake_slack.dm_channel(ALICE)
    async with aiohttp.ClientSession() as http:
        async with served(var, settings, run=0) as gateway:
            for n in range(3):
                body = json.dumps(fake_slack.user_message(ALICE, f"secret {n}")).encode()
                headers = {"Content-Type": "application/json"}
                headers |= signed_request_headers(body, fake_slack.app.signing_secret)
                async with http.post(
                    gateway.url + "/slack/echo/events", data=body, headers=headers
                ) as answer:
                    assert answer.status == 200, await answer.text()
            ours = await _posted(fake_slack, dm, 3)
        database = await open_database(database_url)  # erased while the gateway is down
        try:
            await database.erasure.erase("alice")
        finally:
            await database.close()
        fake_slack.delay("chat.delete", HELD)  # the first deletion: done, its answer held
        async with served(var, settings, run=1) as gateway:
            await fake_slack.wait_for("chat.delete", within=30)
            await gateway.kill()  # Slack deleted the post; the gateway never heard so
        async with served(var, settings, run=2) as gateway:
            posts = {m["ts"] for m in ours}
            await eventually(lambda: posts <= _deleted(fake_slack), what="every post deleted")
            first, *rest = fake_slack.calls("chat.delete")
            again = [c for c in rest if c.args["ts"] == first.args["ts"]]
            assert [c.response.get("error") for c in again] == ["message_not_found"]

            async def forgotten() -> bool:
                reopened = await open_database(database_url)
                try:
                    return (await reopened.slack.thread_of("echo", TEAM_ID, dm)) is None
                finally:
                    await reopened.close()

            await eventually(forgotten, what="the DM's binding forgotten")
            log = gateway.stderr
    assert _ours(fake_slack, dm) == []
    assert len(fake_slack.calls("chat.delete", ok=True)) == 3
    assert "Traceback" not in log
