"""The roles' Slack apps and their workspaces' health over HTTP (`gateway.api.slack`), against
the fake Slack Web API: a DM and the reply make a workspace `ok` with its last event and last
post; Slack refusing posts with `token_revoked` makes it `failing`, with the code, the method and
when, until a post goes through again; an app installed over OAuth lists each installed
workspace, paged, and one that removed the app as `not_installed`. No answer — of these routes
or of the roles' — carries a token or a secret: only the names of the settings holding them.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from channels.slack import delivery
from tests.slack.conftest import PROXY_VARIABLES
from tests.slack.dm_gateway import BOT, SIGNING, SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, BOB, TEAM_ID, FakeSlack, event_callback
from tests.slack.test_slack_install import (
    CLIENT_ID,
    CLIENT_SECRET,
    NORA,
    NORTH,
    OAUTH_WARNING,
    SAM,
    SOUTH,
    Installer,
    oauth_gateway,
)
from tests.waiting import eventually


@pytest.fixture
async def fake_slack(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeSlack]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(delivery, "RETRY_PAUSE", 0.05)  # a refused post is tried again soon
    async with FakeSlack(users=(ALICE, BOB)) as fake:
        yield fake


def _secrets(fake: FakeSlack) -> list[str]:
    return [fake.app.signing_secret, fake.app.client_secret, fake.bot.token, NORTH.token]


async def _workspaces(gw: SlackGateway, query: str = "") -> dict[str, Any]:
    reply = await gw.api.get(f"/api/v1/slack/echo/workspaces{query}")
    assert reply.status == 200, reply.text
    page: dict[str, Any] = reply.body
    return page


async def _one(gw: SlackGateway, what: str, holds: Callable[[dict[str, Any]], bool]) -> Any:
    """The app's one workspace, once `holds` holds of it."""

    async def found() -> dict[str, Any] | None:
        [workspace] = (await _workspaces(gw))["workspaces"]
        return workspace if holds(workspace) else None

    return await eventually(found, what=what)


async def test_a_workspace_is_ok_then_failing_on_token_revoked_then_ok_again(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    dm = fake_slack.dm_channel(ALICE)
    async with slack_gateway(tmp_path, fake_slack) as gw:
        assert (await _workspaces(gw))["workspaces"] == []  # nobody has written yet
        await gw.post_event(fake_slack.user_message(ALICE, "hello"))
        await fake_slack.wait_for("chat.postMessage", ok=True)

        ok = await _one(gw, "the reply recorded", lambda w: w["last_post_at"] is not None)

        assert (ok["team_id"], ok["health"], ok["dms"]) == (TEAM_ID, "ok", 1)
        assert ok["installed"] is None and ok["error"] is None and ok["last_event_at"]
        [app] = (await gw.api.get("/api/v1/slack")).body["apps"]
        assert app == {
            "role": "echo",
            "display_name": "Echo",
            "mode": "http",
            "installed": "bot_token",
            "settings": {"signing_secret": SIGNING, "bot_token": BOT},
            "install_path": None,
            "delivery": {"cursor": app["delivery"]["cursor"], "behind": 0, "intents": 0},
        }
        assert app["delivery"]["cursor"] > 0

        fake_slack.fail("chat.postMessage", "token_revoked", times=None)
        await gw.post_event(fake_slack.user_message(ALICE, "are you there?"))
        failing = await _one(gw, "the refusal recorded", lambda w: w["health"] == "failing")

        assert failing["error"]["code"] == "token_revoked"
        assert failing["error"]["method"] == "chat.postMessage"
        assert failing["error"]["at"] > ok["last_post_at"]
        assert failing["last_post_at"] == ok["last_post_at"]
        assert failing["last_event_at"] > ok["last_event_at"]

        fake_slack.clear_faults()  # a new token, say: the waiting reply goes through
        refused_at = failing["error"]["at"]
        again = await _one(gw, "a post after it", lambda w: (w["last_post_at"] or "") > refused_at)
        assert again["health"] == "ok"
        assert again["error"] == failing["error"]  # still shown, and older than the last post
        assert [m["text"] for m in fake_slack.messages(dm) if m.get("bot_id")][-1] == (
            "are you there?"
        )

        texts = [
            (await gw.api.get(path)).text
            for path in ("/api/v1/slack", "/api/v1/slack/echo/workspaces", "/api/v1/roles/echo")
        ]
        for secret in _secrets(fake_slack):
            assert all(secret not in text for text in texts)
        assert SIGNING in texts[2] and BOT in texts[2]  # the roles' answer names them too


async def test_unknown_roles_and_bad_pages_are_refused(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        (await gw.api.get("/api/v1/slack/nobody/workspaces")).error(404, "role_not_found")
        (await gw.api.get("/api/v1/slack/echo/workspaces?limit=0")).error(422, "invalid_parameter")
        too_long = "T" * 33
        (await gw.api.get(f"/api/v1/slack/echo/workspaces?after={too_long}")).error(
            422, "invalid_parameter"
        )
        (await gw.api.get("/api/v1/slack?role=echo")).error(422, "unknown_parameter")
        (await gw.api.get("/api/v1/slack", token="wrong-token-wrong-token")).error(
            401, "unauthorized"
        )


@OAUTH_WARNING
async def test_installed_workspaces_are_paged_and_one_that_removed_the_app_is_not_installed(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    for user in (NORA, SAM):
        fake_slack.add_user(user)
    fake_slack.add_oauth_code("north-code", NORTH, installer=NORA.id)
    fake_slack.add_oauth_code("south-code", SOUTH, installer=SAM.id)
    async with oauth_gateway(tmp_path, fake_slack) as gw:
        await Installer(gw).install("north-code")
        await Installer(gw).install("south-code")

        first = await _workspaces(gw, "?limit=1")
        [north] = first["workspaces"]
        assert first["next"] == NORTH.team_id
        assert (north["team_id"], north["team_name"], north["installed"]) == (
            NORTH.team_id,
            "North",
            True,
        )
        assert north["health"] == "quiet" and north["installed_at"] and north["dms"] == 0
        second = await _workspaces(gw, f"?limit=1&after={NORTH.team_id}")
        assert [w["team_id"] for w in second["workspaces"]] == [SOUTH.team_id]
        assert second["next"] is None
        [app] = (await gw.api.get("/api/v1/slack")).body["apps"]
        assert app["installed"] == "oauth" and app["install_path"] == "/slack/echo/install"
        assert app["settings"] == {
            "signing_secret": SIGNING,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
        }

        await gw.post_event(fake_slack.user_message(NORA, "north here", bot=NORTH))
        await fake_slack.wait_for("chat.postMessage", ok=True)
        uninstalled = event_callback(
            {"type": "app_uninstalled", "event_ts": str(time.time())},
            team_id=NORTH.team_id,
            api_app_id=NORTH.app_id,
        )
        assert (await gw.post_event(uninstalled))[0] == 200
        fake_slack.expire_token(NORTH.token)
        [thread] = (await gw.api.get("/api/v1/threads?participant=role:echo")).body["threads"]
        await gw.api.say(thread["id"], "role:echo", "news for the north")
        await fake_slack.wait_for("chat.postMessage", ok=False)

        async def gone() -> dict[str, Any] | None:
            found = (await _workspaces(gw))["workspaces"][0]
            return found if found["error"] is not None else None

        north = await eventually(gone, what="north's refusal recorded")
        assert north["health"] == "not_installed" and north["installed"] is False
        assert north["error"]["code"] == "token_expired"
        assert north["dms"] == 1 and north["last_post_at"] and north["last_event_at"]
        south = (await _workspaces(gw))["workspaces"][1]
        assert south["health"] == "quiet" and south["installed"] is True
        text = (await gw.api.get("/api/v1/slack/echo/workspaces")).text
        assert all(secret not in text for secret in _secrets(fake_slack))
