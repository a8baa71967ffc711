"""Slack's Web API down for a while, through the real SDK clients: every call fails in turn with
an HTML 500 (no effect), a 503 after it took effect (the post is in Slack, the gateway cannot
know), and a dropped connection (no effect). Replies written meanwhile queue; once Slack is
back they drain, each DM's in the order written, none lost and none doubled — the post Slack
took during the outage is found in the DM's history, not posted again. And a post Slack refuses
`POST_ATTEMPTS` times over is not skipped: the delivery waits, and posts it when Slack takes it.
"""

from __future__ import annotations

import logging
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from channels.slack.delivery import POST_ATTEMPTS
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, BOB, FakeSlack, User
from tests.waiting import eventually


def _ours(fake: FakeSlack, channel: str) -> list[dict[str, Any]]:
    return [
        m
        for m in fake.messages(channel)
        if m.get("bot_id") == fake.bot.bot_id and (m.get("metadata") or {}).get("event_payload")
    ]


async def _say(gw: SlackGateway, fake: FakeSlack, user: User, text: str) -> None:
    status, body = await gw.post_event(fake.user_message(user, text))
    assert status == 200, body


async def _replied(fake: FakeSlack, channel: str, text: str) -> bool:
    return any(m["text"] == text for m in _ours(fake, channel))


async def test_replies_written_while_slack_is_down_drain_in_order_once_it_is_back(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack
) -> None:
    dms = {user.id: fake_slack.dm_channel(user) for user in (ALICE, BOB)}
    said: dict[str, list[str]] = {user.id: [] for user in (ALICE, BOB)}
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        for user in (ALICE, BOB):  # known before the outage (users.info is not retried)
            said[user.id].append(f"{user.name} before")
            await _say(gw, fake_slack, user, said[user.id][-1])
            await eventually(partial(_replied, fake_slack, dms[user.id], said[user.id][-1]))

        before = len(fake_slack.recorded)
        fake_slack.outage(("taken", "error", "drop"), hang=0.3)
        for i in range(3):
            for user in (ALICE, BOB):
                said[user.id].append(f"{user.name} during {i}")
                await _say(gw, fake_slack, user, said[user.id][-1])

        async def every_kind_seen() -> bool:
            """A post taken (another call — the turn's "working…" status on a slow machine —
            may be the one the outage takes first), and every kind of failure."""
            during = fake_slack.recorded[before:]
            taken = [
                c
                for c in during
                if c.method == "chat.postMessage" and c.response.get("fake_outage_taken")
            ]
            kinds = {c.status for c in during}
            return bool(taken) and {0, 500, 503} <= kinds and len(during) >= 6

        await eventually(every_kind_seen, within=30)
        taken_posts = [
            c
            for c in fake_slack.recorded[before:]
            if c.method == "chat.postMessage" and c.response.get("fake_outage_taken")
        ]
        assert taken_posts, "no post was taken during the outage"
        fake_slack.end_outage()

        for user in (ALICE, BOB):
            await eventually(
                partial(_replied, fake_slack, dms[user.id], said[user.id][-1]), within=60
            )

    for user in (ALICE, BOB):
        ours = _ours(fake_slack, dms[user.id])
        assert [m["text"] for m in ours] == said[user.id]  # all of them, once each, in order
        ids = Counter(m["metadata"]["event_payload"]["id"] for m in ours)
        assert set(ids.values()) == {1}
    # The post Slack took during the outage was found afterwards, not posted again.
    found = fake_slack.calls("conversations.replies", ok=True)
    assert found, "no history was read after the outage"


async def test_a_post_refused_past_every_attempt_is_not_skipped(
    tmp_path: Path, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    dm = fake_slack.dm_channel(ALICE)
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await _say(gw, fake_slack, ALICE, "first")
        await eventually(lambda: _replied(fake_slack, dm, "first"))
        fake_slack.fail("chat.postMessage", "team_access_not_granted", times=POST_ATTEMPTS)
        with caplog.at_level(logging.INFO, logger="rolecall.slack"):
            await _say(gw, fake_slack, ALICE, "refused for a while")
            await _say(gw, fake_slack, ALICE, "after it")
            await eventually(lambda: _replied(fake_slack, dm, "after it"), within=60)
    assert [m["text"] for m in _ours(fake_slack, dm)] == [
        "first",
        "refused for a while",
        "after it",
    ]
    refused = fake_slack.calls("chat.postMessage", ok=False)
    assert len(refused) == POST_ATTEMPTS
    waits = [r for r in caplog.records if "waits" in r.getMessage()]
    assert waits and all(r.exc_info is None for r in waits)  # expected: no traceback
    assert not any(r.exc_info for r in caplog.records if r.name.startswith("rolecall.slack"))
