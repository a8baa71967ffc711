"""Where the delivery worker posts a reply, from what it followed of the conversation: each
reply in the Slack thread of the message it answers, a reply to a message said elsewhere at the
top level; nothing posted twice when a restart finds a reply posted but the cursor behind it
(the worker then looks up what it did not follow); posts to one DM reach Slack paced."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, FakeSlack
from tests.waiting import eventually


async def _say(gw: SlackGateway, fake: FakeSlack, text: str, thread_ts: str | None = None) -> str:
    """Alice writes in her DM; the ts of her message (once the reply to it is posted)."""
    said = fake.user_message(ALICE, text, thread_ts=thread_ts)
    before = len(fake.calls("chat.postMessage", ok=True))
    status, _ = await gw.post_event(said)
    assert status == 200
    await fake.wait_for("chat.postMessage", before + 1, ok=True)
    return str(said["event"]["ts"])


async def _last_position(gw: SlackGateway) -> int:
    [thread] = (await gw.api.get("/api/v1/threads?participant=person:alice")).body["threads"]
    position: int = (await gw.api.timeline(thread["id"]))["events"][-1]["position"]
    return position


def _cursor(tmp_path: Path) -> int:
    """How far the Slack delivery has posted, as its database says."""
    with sqlite3.connect(tmp_path / "t.db") as db:
        [position] = db.execute("SELECT coalesce(max(position), 0) FROM slack_cursors").fetchone()
    return int(position)


def _replies(fake: FakeSlack) -> list[tuple[str, str | None]]:
    return [(c.args["text"], c.args.get("thread_ts")) for c in fake.calls("chat.postMessage")]


async def test_each_reply_is_in_the_thread_of_the_message_it_answers(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        first = await _say(gw, fake_slack, "first")
        await _say(gw, fake_slack, "in its thread", thread_ts=first)
        second = await _say(gw, fake_slack, "second")
        await _say(gw, fake_slack, "first again", thread_ts=first)
        assert _replies(fake_slack) == [
            ("first", first),
            ("in its thread", first),
            ("second", second),
            ("first again", first),
        ]


async def test_a_reply_to_a_message_from_the_widget_is_at_the_top_level(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        widget = gw.widget()
        await widget.start()
        status, code, _ = await widget.call("POST", "/link-codes", {})
        assert status == 201, code
        await _say(gw, fake_slack, "before the link")
        await gw.post_event(fake_slack.user_message(ALICE, f"link {code['code']}"))
        await fake_slack.wait_for("chat.postMessage", 2)  # "Linked: …"

        await widget.say("from the widget")  # quoted in the DM, then echo's reply
        posts = await fake_slack.wait_for("chat.postMessage", 4)
        assert posts[3].args["text"] == "from the widget"
        assert posts[3].args.get("thread_ts") is None

        ts = await _say(gw, fake_slack, "from slack")
        assert _replies(fake_slack)[-1] == ("from slack", ts)


async def test_a_restart_with_the_cursor_behind_a_posted_reply_posts_it_once(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        first = await _say(gw, fake_slack, "posted before the restart")
        reply = await _last_position(gw)
        await eventually(  # its ts recorded, the cursor moved past it
            lambda: _cursor(tmp_path) >= reply, what="the cursor past the reply"
        )
    with sqlite3.connect(tmp_path / "t.db") as db:  # as if it stopped before the cursor moved
        db.execute("UPDATE slack_cursors SET position = 0")
    async with slack_gateway(tmp_path, fake_slack) as gw:
        # posted in order: a second post of the reply before would have come before this one
        after = await _say(gw, fake_slack, "after the restart")
        assert _replies(fake_slack) == [
            ("posted before the restart", first),
            ("after the restart", after),
        ]


async def test_posts_to_one_dm_are_paced(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack, pace=0.4) as gw:
        for text in ("one", "two", "three"):
            status, _ = await gw.post_event(fake_slack.user_message(ALICE, text))
            assert status == 200
        posts = await fake_slack.wait_for("chat.postMessage", 3, ok=True)
        assert [p.args["text"] for p in posts] == ["one", "two", "three"]
        # sent `pace` apart; what each took to reach Slack may differ by a little
        assert all(b.at - a.at >= 0.3 for a, b in itertools.pairwise(posts))


async def test_a_message_on_the_roles_initiative_is_at_the_top_level(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    """The concierge tells the person of a status change of a task it watches with
    `send_message` and no `context`: a turn woken by task news, so its message is the role's
    initiative — at the top level of the DM, not in the thread of the person's last message."""
    async with slack_gateway(tmp_path, fake_slack, agent="concierge") as gw:
        asked = await _say(gw, fake_slack, "create a task: paint the door")
        [(created, where)] = _replies(fake_slack)
        assert "paint the door" in created and where == asked
        [task] = (await gw.api.get("/api/v1/tasks")).body["tasks"]
        done = {"author": "person:bob", "status": "done"}
        changed = await gw.api.call("PATCH", f"/api/v1/tasks/{task['id']}", json=done)
        assert changed.status == 200, changed.text

        await fake_slack.wait_for("chat.postMessage", 2, ok=True)
        told, where = _replies(fake_slack)[-1]
        assert told == 'The task "paint the door" is now done.'
        assert where is None
        [thread] = (await gw.api.get("/api/v1/threads?participant=person:alice")).body["threads"]
        events = (await gw.api.timeline(thread["id"]))["events"]
        reply, news = [e for e in events if e.get("author") == "role:echo"]
        assert reply["in_reply_to"] == next(e["id"] for e in events if e["seq"] == 1)
        assert news["in_reply_to"] is None and news["context"] is None

        ts = await _say(gw, fake_slack, "thanks")
        assert _replies(fake_slack)[-1][1] == ts  # a reply to a person is in their thread
