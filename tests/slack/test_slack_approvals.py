"""Approvals in a Slack DM (docs/approvals.md, "In Slack"): real slack-bolt over real HTTP on
loopback (and over Socket Mode), against the fake Slack Web API. The request is posted once, with
a button per option; a click answers it from the channel `slack`, and the post is updated to the
outcome whichever channel answered; the first answer wins and a later click — Slack's retry of the
same one, a click after an answer elsewhere — is told who answered; a removed participant, an
option or an approval that is not the request's, and a forged request change nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from channels.edge.requests import DATABASE_KEY
from channels.slack.approvals import action_id
from core.model.participants import Address
from core.model.timeline import ApprovalRequested, ApprovalResolved, ThreadId
from core.storage.database import Database
from gateway.settings import SiteSettings
from tests.approvals import restart_request
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import (
    ALICE,
    BOB,
    Call,
    FakeSlack,
    User,
    interactivity_body,
    signed_request_headers,
)
from tests.waiting import eventually
from tests.web.conftest import SHOP_ORIGIN, SHOP_SECRET, user_token

ROLE = Address("role:echo")

T = TypeVar("T")

SHOWN: dict[str | None, str] = {
    "slack": "Answered *Allow once* by alice (Slack)",
    "web": "Answered *Reject* by alice (widget)",
}
"""What the post of a race's request shows in place of its buttons, by the channel that won."""


def _db(gw: SlackGateway) -> Database:
    return gw.server.app[DATABASE_KEY]


async def _conversation(gw: SlackGateway, fake: FakeSlack, channel: str | None = None) -> str:
    """Alice writes (in her DM, or in `channel`), the echo answers: the DM is bound to their
    conversation, whose id this is."""
    await gw.post_event(fake.user_message(ALICE, "hello", channel=channel))
    await fake.wait_for("chat.postMessage")
    threads = (await gw.api.get("/api/v1/threads?participant=person:alice")).body["threads"]
    [thread] = threads
    return str(thread["id"])


async def _marker(gw: SlackGateway, fake: FakeSlack) -> None:
    """Alice's next message, answered: everything committed before it has been delivered."""
    await gw.post_event(fake.user_message(ALICE, "marker"))

    def answered() -> bool:
        return any(c.args.get("text") == "marker" for c in fake.calls("chat.postMessage", ok=True))

    await eventually(answered, what="the marker's answer posted")


async def _ask(gw: SlackGateway, thread_id: str, **request: Any) -> ApprovalRequested:
    """The role asks in the conversation, as its run would."""
    return await _db(gw).approvals.request(
        ThreadId(thread_id), "run1", ROLE, restart_request(**request)
    )


async def _posted(fake: FakeSlack, asked: ApprovalRequested) -> Call:
    """The post of the request, found by the event id in its metadata."""

    def post() -> Call | None:
        for call in fake.calls("chat.postMessage", ok=True):
            metadata = call.response["message"].get("metadata", {})
            if metadata.get("event_payload") == {"id": asked.id}:
                return call
        return None

    return await eventually(post, what=f"the post of approval {asked.id}")


async def _resolved(gw: SlackGateway, asked: ApprovalRequested) -> ApprovalResolved:
    async def resolution() -> ApprovalResolved | None:
        return (await _db(gw).approvals.get(asked.id))[1]

    return await eventually(resolution, what=f"approval {asked.id} resolved")


async def _updated_to(fake: FakeSlack, post: Call, outcome: str) -> dict[str, Any]:
    """The post once it shows `outcome` in place of its buttons."""

    def shown() -> dict[str, Any] | None:
        message = fake.message(post.args["channel"], post.response["ts"])
        assert message is not None
        texts = [b.get("text", {}).get("text") for b in message.get("blocks", [])]
        return message if outcome in texts else None

    return await eventually(shown, what=f"the post updated to {outcome!r}")


def _told(fake: FakeSlack, user: str, count: int = 1) -> list[str] | None:
    said = [e["text"] for e in fake.ephemerals if e["user"] == user]
    return said if len(said) >= count else None


async def _resolutions(gw: SlackGateway, thread_id: str) -> list[dict[str, Any]]:
    events = (await gw.api.timeline(thread_id))["events"]
    return [e for e in events if e["kind"] == "approval_resolved"]


async def test_a_request_is_posted_once_with_a_button_per_option_and_a_click_answers_it(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        thread_id = await _conversation(gw, fake_slack)
        asked = await _ask(gw, thread_id)
        post = await _posted(fake_slack, asked)
        channel = fake_slack.dm_channel(ALICE)
        assert post.args["channel"] == channel and post.args.get("thread_ts") is None
        assert post.args["text"] == "Restart the web service? (Allow once / Reject)"
        blocks = post.args["blocks"]  # the SDK posts JSON
        assert blocks[0]["text"]["text"] == "*Restart the web service?*"
        assert blocks[1]["text"]["text"] == "It is answering 502s."
        assert blocks[2]["text"]["text"] == '```execute {"command": "systemctl restart web"}```'
        assert blocks[3]["elements"][0]["text"].startswith(
            "Anyone in this conversation may answer · expires <!date^"
        )
        [actions] = [b for b in blocks if b["type"] == "actions"]
        assert [
            (b["text"]["text"], b.get("style"), b["action_id"]) for b in actions["elements"]
        ] == [
            ("Allow once", "primary", f"approval:{asked.id}:allow"),
            ("Reject", "danger", f"approval:{asked.id}:reject"),
        ]

        click = fake_slack.click(ALICE, channel, post.response["ts"], action_id(asked.id, "allow"))
        status, _ = await gw.post_interaction(click)
        assert status == 200
        resolved = await _resolved(gw, asked)
        assert (resolved.option and resolved.option.id, resolved.by, resolved.channel) == (
            "allow",
            "person:alice",
            "slack",
        )
        message = await _updated_to(fake_slack, post, "Answered *Allow once* by alice (Slack)")
        assert not [b for b in message["blocks"] if b["type"] == "actions"]  # no buttons left
        assert message["text"] == "Restart the web service? (Answered Allow once by alice (Slack))"
        assert message["blocks"][0]["text"]["text"] == "*Restart the web service?*"

        # One post of the request, however many pages and updates went by.
        await _marker(gw, fake_slack)
        posts = [c for c in fake_slack.calls("chat.postMessage") if "blocks" in c.args]
        assert len(posts) == 1
        assert fake_slack.ephemerals == []  # an answer is shown by the update, not told


async def _race_a_click(
    gw: SlackGateway,
    fake: FakeSlack,
    thread_id: str,
    other: Callable[[ApprovalRequested, dict[str, Any]], Awaitable[T]],
) -> tuple[ApprovalResolved, T]:
    """The role asks in the conversation; on its post, Alice clicks *Allow once* at the same
    moment as `other(request, her click)` answers too. The click gets its 200, the post comes
    to show the winner's answer (`SHOWN`), and the request is resolved once: its resolution,
    and what `other` got."""
    asked = await _ask(gw, thread_id)
    post = await _posted(fake, asked)
    click = fake.click(
        ALICE, post.args["channel"], post.response["ts"], action_id(asked.id, "allow")
    )
    (clicked, _), answered = await asyncio.gather(gw.post_interaction(click), other(asked, click))
    assert clicked == 200
    resolved = await _resolved(gw, asked)
    await _updated_to(fake, post, SHOWN[resolved.channel])
    assert len(await _resolutions(gw, thread_id)) == 1
    return resolved, answered


async def test_the_same_click_twice_answers_once_and_the_second_is_told(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        thread_id = await _conversation(gw, fake_slack)
        resolved, (again, _) = await _race_a_click(
            gw, fake_slack, thread_id, lambda _, click: gw.post_interaction(click)
        )
        assert (resolved.channel, again) == ("slack", 200)
        told = await eventually(lambda: _told(fake_slack, ALICE.id), what="the retry told")
        assert told == ["Already answered by you in Slack: “Allow once”."]


async def test_a_click_and_an_api_answer_at_once_resolve_it_once(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        thread_id = await _conversation(gw, fake_slack)
        answer = {"option": "reject", "as": "person:alice", "channel": "web"}
        resolved, answered = await _race_a_click(
            gw,
            fake_slack,
            thread_id,
            lambda asked, _: gw.api.post(f"/api/v1/approvals/{asked.id}", answer),
        )
        if resolved.channel == "slack":  # the click won: the other answer is told who answered
            assert answered.status == 409, answered.text
            assert "person:alice (slack)" in answered.body["error"]["message"]
        else:  # the widget's answer won: the click is told so
            assert answered.status == 200, answered.text
            told = await eventually(lambda: _told(fake_slack, ALICE.id), what="the click told")
            assert told == ["Already answered by you in the widget: “Reject”."]


async def test_a_click_and_a_widget_answer_at_once_resolve_it_once(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack
) -> None:
    """Alice on two channels at the same moment: her click in Slack and her click in the widget
    (signed in on the shop's site, an identity of the same person)."""
    sites = {"shop": SiteSettings.model_validate({"secret": SHOP_SECRET, "origins": [SHOP_ORIGIN]})}
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url, sites=sites) as gw:
        thread_id = await _conversation(gw, fake_slack)
        linked = await gw.api.post(
            "/api/v1/persons/alice/identities", {"identity": "web:shop:alice-web"}
        )
        assert linked.status in (200, 201), linked.text
        widget = gw.widget(SHOP_ORIGIN)
        session = await widget.start(site="shop", user_token=user_token("alice-web", "Alice"))
        assert session["conversation"] == thread_id  # one person, one conversation
        resolved, (status, answered, _) = await _race_a_click(
            gw,
            fake_slack,
            thread_id,
            lambda asked, _: widget.call("POST", f"/approvals/{asked.id}", {"option": "reject"}),
        )
        if resolved.channel == "slack":  # the click won: the widget is told who answered
            assert status == 409, answered
            assert answered["error"]["code"] == "approval_closed"
        else:  # the widget won: the click is told so
            assert (status, resolved.channel) == (200, "web"), answered
            told = await eventually(lambda: _told(fake_slack, ALICE.id), what="the click told")
            assert told == ["Already answered by you in the widget: “Reject”."]


async def test_an_answer_elsewhere_and_an_expiry_replace_the_buttons(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        thread_id = await _conversation(gw, fake_slack)
        asked = await _ask(gw, thread_id)
        post = await _posted(fake_slack, asked)
        # Alice's other device still shows the buttons: its click comes after the answer.
        late = fake_slack.click(
            ALICE, post.args["channel"], post.response["ts"], action_id(asked.id, "allow")
        )
        answered = await gw.api.post(
            f"/api/v1/approvals/{asked.id}", {"option": "reject", "as": "person:alice"}
        )
        assert answered.status == 200, answered.text
        await _updated_to(fake_slack, post, "Answered *Reject* by alice (API)")
        assert (await gw.post_interaction(late))[0] == 200
        told = await eventually(lambda: _told(fake_slack, ALICE.id), what="the late click told")
        assert told == ["Already answered by you through the API: “Reject”."]

        expiring = await _ask(gw, thread_id, title="Roll back?", expires_in=timedelta(seconds=-1))
        expiring_post = await _posted(fake_slack, expiring)
        click = fake_slack.click(
            ALICE,
            expiring_post.args["channel"],
            expiring_post.response["ts"],
            action_id(expiring.id, "allow"),
        )
        assert (await gw.post_interaction(click))[0] == 200
        resolved = await _resolved(gw, expiring)
        assert (resolved.outcome.value, resolved.by) == ("expired", None)
        await _updated_to(fake_slack, expiring_post, "Expired unanswered")
        told = await eventually(lambda: _told(fake_slack, ALICE.id, 2), what="the click told")
        assert told[1] == "This request expired before anyone answered it."
        assert len(await _resolutions(gw, thread_id)) == 2


async def test_a_removed_participant_s_click_is_refused_and_changes_nothing(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        group = fake_slack.mpim_channel(ALICE, BOB)
        thread_id = await _conversation(gw, fake_slack, channel=group)
        asked = await _ask(gw, thread_id)
        post = await _posted(fake_slack, asked)
        assert post.args["channel"] == group
        await gw.api.set_state(thread_id, "person:bob", "removed")
        ts = post.response["ts"]
        click = fake_slack.click(BOB, group, ts, action_id(asked.id, "allow"))
        assert (await gw.post_interaction(click))[0] == 200
        told = await eventually(lambda: _told(fake_slack, BOB.id), what="Bob told")
        assert told == ["You were removed from this conversation, so you cannot answer."]
        assert (await _db(gw).approvals.get(asked.id))[1] is None

        # Alice, still in it, answers with the same buttons.
        click = fake_slack.click(ALICE, group, ts, action_id(asked.id, "reject"))
        assert (await gw.post_interaction(click))[0] == 200
        resolved = await _resolved(gw, asked)
        assert (resolved.by, resolved.channel) == ("person:alice", "slack")
        await _updated_to(fake_slack, post, "Answered *Reject* by alice (Slack)")
        assert fake_slack.ephemerals == [
            {
                "channel": group,
                "user": BOB.id,
                "text": told[0],
                "ts": fake_slack.ephemerals[0]["ts"],
            }
        ]


async def test_what_is_not_an_answer_is_refused_and_changes_nothing(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        bob_thread = await _bob_s_conversation(gw, fake_slack)
        theirs = await _ask(gw, bob_thread, title="Bob's question")
        thread_id = await _conversation(gw, fake_slack)
        asked = await _ask(gw, thread_id)
        post = await _posted(fake_slack, asked)
        channel, ts = post.args["channel"], post.response["ts"]
        click = fake_slack.click(ALICE, channel, ts, action_id(asked.id, "allow"))

        status, body = await gw.post_interaction(click, secret="forged")
        assert status == 401
        assert json.loads(body)["error"]["code"] == "invalid_signature"
        for sent, content_type, code in [
            (json.dumps(click).encode(), "application/json", (400, "invalid_body")),
            (b"payload=%7Bnot+json", "application/x-www-form-urlencoded", (400, "invalid_json")),
            (
                interactivity_body({**click, "type": "view_submission"}),
                None,
                (422, "invalid_slack_interaction"),
            ),
            (
                interactivity_body({**click, "actions": "allow"}),
                None,
                (422, "invalid_slack_interaction"),
            ),
            (
                interactivity_body({**click, "user": {"id": 7}}),
                None,
                (422, "invalid_slack_interaction"),
            ),
        ]:
            status, body = await _post_signed(gw, sent, content_type)
            assert (status, json.loads(body)["error"]["code"]) == code, sent

        not_answers = [
            (f"approval:{asked.id}:maybe", "That is not one of this request's options"),
            (f"approval:{'f' * 32}:allow", "That request is not one of this conversation's"),
            (f"approval:{theirs.id}:allow", "That request is not one of this conversation's"),
        ]
        for action, _ in not_answers:
            forged = {**click, "actions": [{**click["actions"][0], "action_id": action}]}
            assert (await gw.post_interaction(forged))[0] == 200
        told = await eventually(lambda: _told(fake_slack, ALICE.id, len(not_answers)))
        assert told == [f"{said}: nothing was answered." for _, said in not_answers]
        assert (await _db(gw).approvals.get(asked.id))[1] is None
        assert (await _db(gw).approvals.get(theirs.id))[1] is None
        assert fake_slack.calls("chat.update") == []

        # Nobody the gateway knows (she never wrote to the bot), and a deactivated person.
        carol = User(id="U0CAROL001", name="carol", real_name="Carol Cole")
        fake_slack.add_user(carol)
        hers = fake_slack.dm_channel(carol)
        stranger = {
            **click,
            "user": {**click["user"], "id": carol.id},
            "channel": {"id": hers},
            "container": {**click["container"], "channel_id": hers},
        }
        assert (await gw.post_interaction(stranger))[0] == 200
        told = await eventually(lambda: _told(fake_slack, carol.id), what="Carol told")
        assert told == ["I do not know you yet: write to me here first, then answer."]
        deactivated = await gw.api.call("PATCH", "/api/v1/persons/bob", json={"active": False})
        assert deactivated.status == 200, deactivated.text
        bob_post = await _posted(fake_slack, theirs)
        bob_click = fake_slack.click(
            BOB, bob_post.args["channel"], bob_post.response["ts"], action_id(theirs.id, "allow")
        )
        assert (await gw.post_interaction(bob_click))[0] == 200
        told = await eventually(lambda: _told(fake_slack, BOB.id), what="Bob told")
        assert told == ["Your account is deactivated, so you cannot answer."]
        assert (await _db(gw).approvals.get(theirs.id))[1] is None


async def _bob_s_conversation(gw: SlackGateway, fake: FakeSlack) -> str:
    await gw.post_event(fake.user_message(BOB, "hi"))
    await fake.wait_for("chat.postMessage")
    [thread] = (await gw.api.get("/api/v1/threads?participant=person:bob")).body["threads"]
    return str(thread["id"])


async def _post_signed(gw: SlackGateway, body: bytes, content_type: str | None) -> tuple[int, str]:
    """A request signed with the app's secret, whatever it holds."""
    headers = {
        "Content-Type": content_type or "application/x-www-form-urlencoded",
        **signed_request_headers(body, gw.fake.app.signing_secret),
    }
    url = gw.server.make_url("/slack/echo/interactivity")
    async with gw.http.post(url, data=body, headers=headers) as resp:
        return resp.status, await resp.text()


async def test_a_click_over_socket_mode_answers(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack, mode="socket") as gw:
        await fake_slack.wait_for_socket()
        envelope = await fake_slack.socket_send_event(fake_slack.user_message(ALICE, "hello"))
        await fake_slack.socket_ack(envelope)
        await fake_slack.wait_for("chat.postMessage")
        [thread] = (await gw.api.get("/api/v1/threads?participant=person:alice")).body["threads"]
        asked = await _ask(gw, thread["id"])
        post = await _posted(fake_slack, asked)
        click = fake_slack.click(
            ALICE, post.args["channel"], post.response["ts"], action_id(asked.id, "allow")
        )
        envelope = await fake_slack.socket_send_event(click, envelope_type="interactive")
        assert await fake_slack.socket_ack(envelope) == {"envelope_id": envelope}
        resolved = await _resolved(gw, asked)
        assert (resolved.by, resolved.channel) == ("person:alice", "slack")
        await _updated_to(fake_slack, post, "Answered *Allow once* by alice (Slack)")


async def test_an_update_slack_refused_is_made_after_a_restart(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.fail("chat.update", "internal_error", times=None)
    async with slack_gateway(tmp_path, fake_slack) as gw:
        thread_id = await _conversation(gw, fake_slack)
        asked = await _ask(gw, thread_id)
        post = await _posted(fake_slack, asked)
        answered = await gw.api.post(
            f"/api/v1/approvals/{asked.id}", {"option": "allow", "as": "person:alice"}
        )
        assert answered.status == 200, answered.text
        await fake_slack.wait_for("chat.update")
    assert fake_slack.calls("chat.update", ok=True) == []
    fake_slack.clear_faults()
    async with slack_gateway(tmp_path, fake_slack) as gw:  # the same database, started again
        await _updated_to(fake_slack, post, "Answered *Allow once* by alice (API)")
        await _marker(gw, fake_slack)
        assert len([c for c in fake_slack.calls("chat.postMessage") if "blocks" in c.args]) == 1
