"""Linking a Slack user to a person by verified email, on first contact: real slack-bolt over
real HTTP on loopback, against the fake Slack Web API.

In a workspace the operator allows (`ROLECALL_SLACK_EMAIL_LINK_TEAMS`), a Slack user whose email
Slack says is confirmed, and which exactly one active person has, is that person: their DM
continues the person's conversation with the role. An unconfirmed email, a workspace not allowed
or an email several people have makes a new person, as without the setting.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from channels.slack.manifest import SCOPES
from gateway.settings import SettingsError, load_settings
from tests.slack.conftest import PROXY_VARIABLES
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, TEAM_ID, Bot, FakeSlack
from tests.waiting import eventually

ALICE_SLACK = f"slack:{TEAM_ID.lower()}:{ALICE.id}"


async def _person(gw: SlackGateway, slug: str, email: str) -> None:
    made = await gw.api.post(
        "/api/v1/persons", {"display_name": slug.title(), "slug": slug, "email": email}
    )
    assert made.status == 201, made.text


async def _persons(gw: SlackGateway) -> dict[str, str | None]:
    """Every person's slug and email."""
    listed = await gw.api.get("/api/v1/persons")
    return {p["slug"]: p["email"] for p in listed.body["persons"]}


async def _identities(gw: SlackGateway, slug: str) -> list[str]:
    profile = await gw.api.get(f"/api/v1/persons/{slug}")
    return [i["identity"] for i in profile.body["identities"]]


async def _messages(gw: SlackGateway, thread_id: str, person: str) -> list[dict[str, Any]]:
    page = await gw.api.timeline(thread_id, f"?as={person}")
    return [e for e in page["events"] if e["kind"] == "message"]


async def _answered(gw: SlackGateway, thread_id: str, text: str) -> bool:
    """Echo has said `text` back in the thread."""
    messages = await _messages(gw, thread_id, "role:echo")
    return any(e["author"] == "role:echo" and e["text"] == text for e in messages)


async def _replies_in(fake: FakeSlack, channel: str, *texts: str) -> bool:
    """The bot posted each of `texts` to the channel (echo's replies)."""
    posted = [m["text"] for m in fake.messages(channel) if m.get("bot_id")]
    return all(text in posted for text in texts)


async def _slack_makes_a_new_person(gw: SlackGateway, fake: FakeSlack) -> None:
    """Alice's DM is answered, in a conversation of a new person made from Slack, who has no
    email (an email that may not link is not stored either); `ann` keeps hers, alone."""
    await gw.post_event(fake.user_message(ALICE, "hello"))
    [post] = await fake.wait_for("chat.postMessage")
    assert post.args["text"] == "hello"
    assert await _persons(gw) == {"alice": None, "ann": "alice@example.com"}
    assert await _identities(gw, "alice") == [ALICE_SLACK]
    assert await _identities(gw, "ann") == []


async def test_a_confirmed_email_of_an_allowed_workspace_continues_the_person_s_conversation(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, email_link_teams=[TEAM_ID]) as gw:
        await _person(gw, "ann", "Alice@Example.COM")  # compared case-insensitively
        thread = await gw.api.thread("person:ann", "role:echo")
        await gw.api.say(thread["id"], "person:ann", "from the api")
        assert await eventually(lambda: _answered(gw, thread["id"], "from the api"))

        said = fake_slack.user_message(ALICE, "from slack")
        again = fake_slack.user_message(ALICE, "at once")  # two first events, concurrently
        await asyncio.gather(gw.post_event(said), gw.post_event(again))
        channel = said["event"]["channel"]
        replies = await eventually(
            lambda: _replies_in(fake_slack, channel, "from slack", "at once")
        )
        assert replies

        assert await _persons(gw) == {"ann": "Alice@Example.COM"}  # nobody new
        assert await _identities(gw, "ann") == [ALICE_SLACK]
        messages = await _messages(gw, thread["id"], "person:ann")
        said_by_ann = [(e["text"], e["channel"]) for e in messages if e["author"] == "person:ann"]
        assert said_by_ann[0] == ("from the api", "api")
        assert sorted(said_by_ann[1:]) == [("at once", "slack"), ("from slack", "slack")]
        assert next(e["text"] for e in messages if e["author"] == "role:echo") == "from the api"


async def test_an_unconfirmed_email_makes_a_new_person(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.add_user(replace(ALICE, email_confirmed=False))
    async with slack_gateway(tmp_path, fake_slack, email_link_teams=[TEAM_ID]) as gw:
        await _person(gw, "ann", "alice@example.com")
        await _slack_makes_a_new_person(gw, fake_slack)


async def test_a_workspace_not_allowed_makes_a_new_person(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, email_link_teams=["T0ELSEWHERE"]) as gw:
        await _person(gw, "ann", "alice@example.com")
        await _slack_makes_a_new_person(gw, fake_slack)


async def test_no_workspace_is_allowed_by_default(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        await _person(gw, "ann", "alice@example.com")
        await _slack_makes_a_new_person(gw, fake_slack)


async def test_an_email_two_people_have_makes_a_new_person(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack, email_link_teams=[TEAM_ID]) as gw:
        await _person(gw, "ann", "alice@example.com")
        await _person(gw, "anna", "ALICE@example.com")
        await gw.post_event(fake_slack.user_message(ALICE, "hello"))
        await fake_slack.wait_for("chat.postMessage")
        persons = await _persons(gw)
        assert set(persons) == {"alice", "ann", "anna"}
        assert persons["alice"] == "alice@example.com"  # verified: kept on the new person
        assert await _identities(gw, "ann") == await _identities(gw, "anna") == []


async def test_a_deactivated_person_is_not_joined(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack, email_link_teams=[TEAM_ID]) as gw:
        await _person(gw, "ann", "alice@example.com")
        off = await gw.api.call("PATCH", "/api/v1/persons/ann", json={"active": False})
        assert off.status == 200, off.text
        await gw.post_event(fake_slack.user_message(ALICE, "hello"))
        await fake_slack.wait_for("chat.postMessage")
        assert set(await _persons(gw)) == {"alice", "ann"}
        assert await _identities(gw, "alice") == [ALICE_SLACK]


def test_the_setting_is_team_ids_separated_by_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROLECALL_SLACK_EMAIL_LINK_TEAMS", " t0abc1234 ,T0DEF5678,")
    assert load_settings().slack_email_link_teams == {"T0ABC1234", "T0DEF5678"}
    monkeypatch.setenv("ROLECALL_SLACK_EMAIL_LINK_TEAMS", "")
    assert load_settings().slack_email_link_teams == frozenset()
    monkeypatch.setenv("ROLECALL_SLACK_EMAIL_LINK_TEAMS", "acme,T0DEF5678")
    with pytest.raises(SettingsError) as refused:
        load_settings()
    assert str(refused.value) == (
        "ROLECALL_SLACK_EMAIL_LINK_TEAMS: Value error, 'acme' is not a Slack team id like "
        "T0123ABCD (give team ids, not names, separated by commas) (got 'acme,T0DEF5678')"
    )


async def test_without_the_email_scope_nobody_is_linked_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    scopes = frozenset(name for name, _ in SCOPES)  # the manifest without --email-link
    async with (
        FakeSlack(bots=(Bot(scopes=scopes),), users=(ALICE,)) as fake,
        slack_gateway(tmp_path, fake, email_link_teams=[TEAM_ID]) as gw,
    ):
        await _person(gw, "ann", "alice@example.com")
        with caplog.at_level(logging.WARNING, logger="rolecall.slack"):
            await _slack_makes_a_new_person(gw, fake)
        [warning] = [r.getMessage() for r in caplog.records if "users.info" in r.getMessage()]
        assert warning == (
            f"slack: users.info gives no email in workspace {TEAM_ID}, which may link people by "
            "email: does role echo's app have the users:read.email scope (rolecall slack "
            "manifest echo --email-link)?"
        )
