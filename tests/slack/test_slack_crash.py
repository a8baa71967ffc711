"""Exactly once across a crash: a real `rolecall serve` is killed with SIGKILL while the fake
Slack is taking one of its posts — the message stored, its answer held back, so the gateway
never learns its `ts` — and started again on the same database, round after round. In the end
every reply is in the DM exactly once (counted by the event id Slack keeps in each message's
metadata, and by text), none is missing, and the restarts found the posts they had lost the
answer to in the DM's history instead of posting them again. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from tests.slack.fake_slack import ALICE, FakeSlack, signed_request_headers
from tests.slack.served import Served, served
from tests.waiting import eventually

ROUNDS = 4
PER_ROUND = 3
HELD = 120.0
"""Seconds the fake holds the answer to a post (the gateway is killed long before)."""
MANIFEST = """\
name: echo
display_name: Echo
runtime: {kind: builtin, agent: echo}
slack: {mode: http, bot_token: SLACK_ECHO_BOT_TOKEN, signing_secret: SLACK_ECHO_SIGNING_SECRET}
"""


async def _say(http: aiohttp.ClientSession, gateway: Served, fake: FakeSlack, text: str) -> None:
    body = json.dumps(fake.user_message(ALICE, text)).encode()
    headers = {"Content-Type": "application/json"}
    headers |= signed_request_headers(body, fake.app.signing_secret)
    async with http.post(gateway.url + "/slack/echo/events", data=body, headers=headers) as answer:
        assert answer.status == 200, await answer.text()


def _ours(fake: FakeSlack, channel: str) -> list[dict[str, Any]]:
    """The bot's messages in the DM that carry our marker."""
    return [
        m
        for m in fake.messages(channel)
        if m.get("bot_id") == fake.bot.bot_id
        and (m.get("metadata") or {}).get("event_type") == "rolecall_message"
    ]


async def test_kill_9_while_slack_takes_a_post_leaves_every_reply_posted_once(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack
) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "echo.yaml").write_text(MANIFEST)
    settings = {
        "ROLECALL_ROLES_DIR": str(roles),
        "ROLECALL_API_TOKEN": "crash-test-operator-token-0123456789",
        "ROLECALL_DATABASE_URL": database_url,
        "ROLECALL_SLACK_API_URL": fake_slack.api_url,
        "ROLECALL_SLACK_PACE": "0",
        "SLACK_ECHO_BOT_TOKEN": fake_slack.bot.token,
        "SLACK_ECHO_SIGNING_SECRET": fake_slack.app.signing_secret,
    }
    var = tmp_path / "var"
    dm = fake_slack.dm_channel(ALICE)
    said: list[str] = []
    async with aiohttp.ClientSession() as http:
        for run in range(ROUNDS):
            async with served(var, settings, run=run) as gateway:
                posts = len(fake_slack.calls("chat.postMessage"))
                fake_slack.delay("chat.postMessage", HELD)  # the next post: stored, answer held
                for i in range(PER_ROUND):
                    said.append(f"round {run} message {i}")
                    await _say(http, gateway, fake_slack, said[-1])
                await fake_slack.wait_for("chat.postMessage", posts + 1, within=30)
                await gateway.kill()  # Slack has the post; the gateway never got its ts
                assert fake_slack.calls("chat.postMessage")[-1].delayed == HELD
        async with served(var, settings, run=ROUNDS) as gateway:
            said.append("the last message")
            await _say(http, gateway, fake_slack, said[-1])

            async def last_posted() -> bool:
                return any(m["text"] == said[-1] for m in _ours(fake_slack, dm))

            # Replies are posted in order: once the last one is in, every earlier one is.
            await eventually(last_posted, within=30)
            log = gateway.stderr

    ours = _ours(fake_slack, dm)
    by_event = Counter(m["metadata"]["event_payload"]["id"] for m in ours)
    assert set(by_event.values()) == {1}, f"posted more than once: {by_event}"
    assert sorted(m["text"] for m in ours) == sorted(said)  # each reply once, none missing
    assert [m["text"] for m in ours] == said  # and in the order they were written
    # Every restart found the post it had lost the answer to, rather than posting it again.
    lookups = fake_slack.calls("conversations.replies", ok=True)
    assert len(lookups) >= ROUNDS
    assert all(call.args.get("include_all_metadata") in ("1", 1, True) for call in lookups)
    assert "Traceback" not in log
