"""One erasure, every surface (issue #22, docs/privacy.md): Alice talks to the role `echo` in her
Slack DM (the real slack-bolt against the fake Slack Web API) and in the widget (real Chromium),
one person through a link code; the role keeps memory of her; an outbound endpoint follows every
event; Bob talks to the same role in his own DM. The operator erases Alice
(`DELETE /api/v1/persons/alice?erase=true`). Then her texts are tombstones on every read (the
API's timeline, the events stream), the widget has cleared her conversation and starts anew, the
fake Slack was asked to delete every post the gateway made in her DM (her own message stays:
Slack lets only her delete it), the endpoint received `erased`, her memory is recalled nowhere,
and Bob's conversation is exactly as it was — and goes on. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect
from standardwebhooks import Webhook

from channels.edge.requests import DATABASE_KEY
from core.model.memory import Recall
from core.model.roles import Role
from core.model.timeline import ThreadId
from core.storage.database import Database
from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot
from tests.browser.host_page import SITE
from tests.outbound.conftest import Receiver
from tests.slack.conftest import PROXY_VARIABLES
from tests.slack.fake_slack import ALICE, BOB, FakeSlack, User, signed_request_headers
from tests.waiting import eventually

SIGNING, BOT = "SLACK_ECHO_SIGNING_SECRET", "SLACK_ECHO_BOT_TOKEN"
PAGE = "/page?role=echo&user=alice-web&name=Alice+Example"
ECHO = "role:echo"
ERASED = "This conversation was erased."


@pytest.fixture
async def fake_slack(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeSlack]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    async with FakeSlack(users=(ALICE, BOB)) as fake:
        yield fake


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as started:
        yield started


@pytest.fixture
def gateway_options(fake_slack: FakeSlack, database_url: str) -> dict[str, Any]:
    """On SQLite and PostgreSQL (the `database_url` fixture)."""
    return {
        "database_url": database_url,
        "slack_api_url": fake_slack.api_url,
        "slack_pace": 0,
        "endpoints_allow_private": True,
        "endpoints_backoff_base": 0.05,
        "endpoints_backoff_cap": 0.2,
    }


@pytest.fixture
def gateway_roles() -> Mapping[str, Role]:
    echo = Role.model_validate(
        {
            "name": "echo",
            "display_name": "Echo",
            "runtime": {"kind": "builtin", "agent": "echo"},
            "slack": {"mode": "http", "signing_secret": SIGNING, "bot_token": BOT},
        }
    )
    return {"echo": echo}


@pytest.fixture
def gateway_secrets(fake_slack: FakeSlack) -> Mapping[str, str]:
    return {SIGNING: fake_slack.app.signing_secret, BOT: fake_slack.bot.token}


async def _dm(gateway: Gateway, fake: FakeSlack, user: User, text: str) -> str:
    """The person writes in their Slack DM with the role's bot; the DM's id."""
    said = fake.user_message(user, text)
    body = json.dumps(said).encode()
    headers = {"Content-Type": "application/json"}
    headers |= signed_request_headers(body, fake.app.signing_secret)
    async with gateway.http.post(
        f"{gateway.url}/slack/echo/events", data=body, headers=headers
    ) as answer:
        assert answer.status == 200, await answer.text()
    return str(said["event"]["channel"])


def _ours(fake: FakeSlack, channel: str) -> list[dict[str, Any]]:
    return [m for m in fake.messages(channel) if m.get("bot_id") == fake.bot.bot_id]


async def _posts(fake: FakeSlack, channel: str, count: int) -> list[dict[str, Any]]:
    def posted() -> list[dict[str, Any]] | None:
        ours = _ours(fake, channel)
        return ours if len(ours) >= count else None

    return await eventually(posted, what=f"{count} posts in {channel}")


async def _ok(gateway: Gateway, method: str, path: str, body: Any = None) -> Any:
    status, answer = await gateway.call(method, path, body)
    assert 200 <= status < 300, (path, answer)
    return answer


async def _conversation(gateway: Gateway, person: str) -> str:
    found = await _ok(gateway, "GET", f"/api/v1/threads?participant={person}")
    [thread] = [t for t in found["threads"] if ECHO in {p["address"] for p in t["participants"]}]
    return str(thread["id"])


async def _timeline(gateway: Gateway, thread: str) -> list[dict[str, Any]]:
    page = await _ok(gateway, "GET", f"/api/v1/threads/{thread}/timeline?include_archived=true")
    return list(page["events"])


def _received(receiver: Receiver, secret: str) -> list[dict[str, Any]]:
    return [Webhook(secret).verify(r.body, r.headers) for r in receiver.accepted("/hook")]


async def test_an_erased_person_is_gone_from_every_surface_and_bob_is_untouched(
    gateway: Gateway,
    fake_slack: FakeSlack,
    receiver: Receiver,
    shop: str,
    open_page: OpenPage,
    tmp_path: Path,
) -> None:
    db: Database = gateway.server.app[DATABASE_KEY]  # type: ignore[union-attr]
    endpoint = await _ok(gateway, "POST", "/api/v1/endpoints", {"url": receiver.url("/hook")})

    # Alice writes in Slack; the same Alice on the shop's site is linked to her with a code.
    alice_dm = await _dm(gateway, fake_slack, ALICE, "slack: my locker is 42")
    await _posts(fake_slack, alice_dm, 1)
    alice_thread = await _conversation(gateway, "person:alice")
    code = await _ok(gateway, "POST", "/api/v1/persons/alice/link-codes", {})
    redeem = {"code": code["code"], "identity": f"web:{SITE}:alice-web"}
    linked = await _ok(gateway, "POST", "/api/v1/link-codes/redeem", redeem)
    assert linked["slug"] == "alice"
    page = await open_page(shop + PAGE, viewport={"width": 1000, "height": 900})
    widget = Widget(page, "Echo")
    await expect(widget.texts).to_have_text(["slack: my locker is 42"] * 2)
    await widget.send("web: my bike is blue")
    await expect(widget.texts).to_have_count(4)
    alice_posts = await _posts(fake_slack, alice_dm, 3)  # her web words quoted, and answered
    assert any("web: my bike is blue" in m["text"] and "via web" in m["text"] for m in alice_posts)

    # The role remembers things of her conversation: one entry only there, one shared.
    await db.memory.store("echo", {"locker": 42, "who": "alice"}, thread_id=ThreadId(alice_thread))
    await _ok(
        gateway,
        "PATCH",
        f"/api/v1/threads/{alice_thread}",
        {"memory_policy": {"thread_only": False}},
    )
    await db.memory.store(
        "echo", {"bike": "blue", "who": "alice"}, thread_id=ThreadId(alice_thread)
    )

    # Bob talks to the same role in his own DM, and the role remembers something of his.
    bob_dm = await _dm(gateway, fake_slack, BOB, "bob: tea, no sugar")
    bob_posts = await _posts(fake_slack, bob_dm, 1)
    bob_thread = await _conversation(gateway, "person:bob")
    await db.memory.store("echo", {"tea": "no sugar", "who": "bob"}, thread_id=ThreadId(bob_thread))
    bob_before = await _timeline(gateway, bob_thread)
    shared = await db.memory.recall("echo", Recall(), thread_id=ThreadId(bob_thread))
    assert {e.payload["who"] for e in shared} == {"alice", "bob"}  # hers is shared, for now

    def sent_so_far() -> bool:
        got = _received(receiver, endpoint["secret"])
        return len([e for e in got if e["type"] == "timeline.message"]) >= 6

    await eventually(sent_so_far, what="the six messages sent to the endpoint")

    # The operator erases Alice.
    erased = await _ok(gateway, "DELETE", "/api/v1/persons/alice?erase=true")
    assert erased["state"] == "erased" and erased["identities"] == []
    assert erased["erased"]["messages"] == 4 and erased["erased"]["slack_posts"] == 3

    # The widget: her conversation cleared, the notice shown, and a new, empty one begun.
    await expect(page.locator("rolecall-widget .erased-notice")).to_have_text(ERASED)
    await expect(widget.messages).to_have_count(0)
    save_screenshot(await widget.panel.screenshot(), tmp_path, "erasure-everywhere-widget.png")

    # Slack: every post the gateway made in her DM deleted; her own message stays.
    ours = {m["ts"] for m in alice_posts}
    await eventually(
        lambda: ours <= {c.args["ts"] for c in fake_slack.calls("chat.delete", ok=True)},
        what="chat.delete for every post in Alice's DM",
    )
    assert _ours(fake_slack, alice_dm) == []
    assert [m["text"] for m in fake_slack.messages(alice_dm)] == ["slack: my locker is 42"]

    # The endpoint: `erased`, signed like every event, for her thread alone.
    def erasures() -> list[dict[str, Any]]:
        got = _received(receiver, endpoint["secret"])
        return [e["data"] for e in got if e["type"] == "timeline.erased"]

    [sent] = await eventually(erasures, what="the endpoint received erased")
    assert (sent["thread_id"], sent["participant"], sent["messages"]) == (
        alice_thread,
        "person:alice",
        4,
    )

    # Every read of her conversation: tombstones in their places, no text.
    events = await _timeline(gateway, alice_thread)
    messages = [e for e in events if e["kind"] == "message"]
    assert len(messages) == 4
    assert {(m["text"], m["erased"], m["context"]) for m in messages} == {("", True, None)}
    assert "erased" in [e["kind"] for e in events]
    stream = await _ok(gateway, "GET", "/api/v1/events?after=0&limit=500")
    texts = json.dumps(stream)
    assert "my locker is 42" not in texts and "my bike is blue" not in texts
    # Her address reaches nothing: her conversation cannot be resolved again.
    status, gone = await gateway.call(
        "POST", "/api/v1/threads", {"participants": ["person:alice", ECHO]}
    )
    assert (status, gone["error"]["code"]) == (410, "person_erased")

    # Her memory is recalled nowhere — not in her thread, not shared into Bob's.
    assert await db.memory.recall("echo", Recall(), thread_id=ThreadId(alice_thread)) == []
    left = await db.memory.recall("echo", Recall(), thread_id=ThreadId(bob_thread))
    assert [e.payload for e in left] == [{"tea": "no sugar", "who": "bob"}]

    # Bob's conversation is exactly as it was, in the API and in his DM, and goes on.
    assert await _timeline(gateway, bob_thread) == bob_before
    assert {m["ts"] for m in _ours(fake_slack, bob_dm)} == {m["ts"] for m in bob_posts}
    await _dm(gateway, fake_slack, BOB, "bob: still here")
    await eventually(
        lambda: any(m["text"] == "bob: still here" for m in _ours(fake_slack, bob_dm)),
        what="Bob answered in his DM",
    )
    assert not any(c.args["channel"] == bob_dm for c in fake_slack.calls("chat.delete"))

    # The widget goes on as someone new, whose conversation is not hers.
    await widget.send("hello again")
    await expect(widget.texts).to_have_text(["hello again"] * 2)
    assert await _conversation(gateway, "person:bob") == bob_thread
    received = _received(receiver, endpoint["secret"])
    assert len([r.id for r in receiver.accepted("/hook")]) == len(
        {r.id for r in receiver.accepted("/hook")}
    )  # nothing was sent twice
    assert [e["data"]["thread_id"] for e in received if e["type"] == "timeline.erased"] == [
        alice_thread
    ]
