"""A DM bound to a conversation that already had messages — by `link <code>` to a person who
talked in the widget — shows what is said from then on, not what was said before, even when the
delivery worker was behind when the link came (here: Slack refused posts for a while)."""

from __future__ import annotations

from pathlib import Path

from tests.slack.dm_gateway import slack_gateway
from tests.slack.fake_slack import ALICE, FakeSlack
from tests.waiting import eventually


async def _posted(fake: FakeSlack, text: str, times: int = 1) -> None:
    def posted() -> bool:
        calls = fake.calls("chat.postMessage", ok=True)
        return sum(text in c.args["text"] for c in calls) >= times

    await eventually(posted, what=f"{text!r} posted {times} times")


async def test_what_was_said_before_a_link_is_not_posted_to_the_dm(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        fake_slack.fail("chat.postMessage", "internal_error", times=None)  # the worker stalls
        status, _ = await gw.post_event(fake_slack.user_message(ALICE, "hello"))
        assert status == 200
        await fake_slack.wait_for("chat.postMessage")  # the echo's reply, refused

        widget = gw.widget()
        await widget.start()
        await widget.say("said in the widget before the link")
        status, code, _ = await widget.call("POST", "/link-codes", {})
        assert status == 201, code
        status, _ = await gw.post_event(fake_slack.user_message(ALICE, f"link {code['code']}"))
        assert status == 200

        fake_slack.clear_faults()  # the worker goes through what it stalled on
        await widget.say("said in the widget after the link")
        # quoted, then echo's reply: what came before them in the conversation went first
        await _posted(fake_slack, "said in the widget after the link", 2)
        texts = [c.args["text"] for c in fake_slack.calls("chat.postMessage", ok=True)]
        assert not [t for t in texts if "before the link" in t], texts
        assert sum("after the link" in t for t in texts) == 2  # quoted, and echo's reply
