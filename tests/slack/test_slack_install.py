"""A role's Slack app installed in many workspaces over OAuth: real slack-bolt over real HTTP on
loopback, against the fake Slack Web API.

The install flow end to end (install page → Slack's authorize URL with a state → Slack's
redirect back with a code → `oauth.v2.access` → the installation in our database); events from
each installed workspace answered with that workspace's bot token; a bad state refused; a
workspace that never installed the app, or removed it, not answered. Below the gateway: the
SDK's stores on the tables the migrations made (on every backend), those tables as the SDK
defines them, and `Clients` (a workspace's client, its token rotated, a refused token dropped).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import create_async_engine

from channels.slack.apps import Clients, NotInstalled, web_client
from channels.slack.install import open_engine
from channels.slack.manifest import SCOPES
from core.model.roles import ManifestError, Role
from core.model.roles.manifests import load_role
from core.storage import schema
from gateway.app import build_app
from tests.api.conftest import TOKEN
from tests.serving import free_port, serve
from tests.slack.dm_gateway import SIGNING, SlackGateway, slack_settings
from tests.slack.fake_slack import Bot, FakeSlack, User, event_callback
from tests.waiting import eventually

OAUTH_WARNING = pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning")
"""slack_sdk 3.48's oauth.v2.access sends the client credentials with aiohttp's BasicAuth."""

CLIENT_ID = "SLACK_ECHO_CLIENT_ID"
CLIENT_SECRET = "SLACK_ECHO_CLIENT_SECRET"
AUTHORIZE = "https://slack.com/oauth/v2/authorize"
COOKIE = "rolecall-slack-echo-oauth-state"

NORTH = Bot(
    token="xoxb-north-0001",
    team_id="T0NORTH001",
    team_name="North",
    user_id="U0NORTHBOT",
    bot_id="B0NORTHBOT",
)
SOUTH = Bot(
    token="xoxb-south-0001",
    team_id="T0SOUTH001",
    team_name="South",
    user_id="U0SOUTHBOT",
    bot_id="B0SOUTHBOT",
)
NORA = User(id="U0NORA0001", name="nora", real_name="Nora North", team_id=NORTH.team_id)
SAM = User(id="U0SAM00001", name="sam", real_name="Sam South", team_id=SOUTH.team_id)


def oauth_role() -> Role:
    return Role.model_validate(
        {
            "name": "echo",
            "display_name": "Echo",
            "runtime": {"kind": "builtin", "agent": "echo"},
            "slack": {
                "signing_secret": SIGNING,
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
            },
        }
    )


class Installer:
    """A browser installing the app: it keeps the state cookie the install page sets."""

    def __init__(self, gw: SlackGateway) -> None:
        self.gw = gw
        self.cookie: str | None = None

    async def begin(self) -> dict[str, str]:
        """GET the install page; the query of the Slack URL it redirects to."""
        url = self.gw.server.make_url("/slack/echo/install")
        async with self.gw.http.get(url, allow_redirects=False) as resp:
            assert resp.status == 302, await resp.text()
            location = resp.headers["Location"]
            cookies = SimpleCookie()
            for header in resp.headers.getall("Set-Cookie"):
                cookies.load(header)
        assert location.startswith(AUTHORIZE + "?")
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
        self.cookie = f"{COOKIE}={cookies[COOKIE].value}"
        return query

    async def come_back(self, **query: str) -> tuple[int, str]:
        """Slack sends the browser back to the redirect URL (with the browser's cookie)."""
        url = self.gw.server.make_url("/slack/echo/oauth_redirect").with_query(query)
        headers = {"Cookie": self.cookie} if self.cookie else {}
        async with self.gw.http.get(url, headers=headers, allow_redirects=False) as resp:
            return resp.status, await resp.text()

    async def install(self, code: str) -> None:
        state = (await self.begin())["state"]
        status, page = await self.come_back(code=code, state=state)
        assert status == 200, page


@asynccontextmanager
async def oauth_gateway(tmp_path: Path, fake: FakeSlack) -> AsyncIterator[SlackGateway]:
    port = free_port()
    secrets = {
        SIGNING: fake.app.signing_secret,
        CLIENT_ID: fake.app.client_id,
        CLIENT_SECRET: fake.app.client_secret,
    }
    app = build_app(
        slack_settings(tmp_path, fake, port),
        api_token=TOKEN,
        roles={"echo": oauth_role()},
        secrets=secrets,
    )
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        yield SlackGateway(server, http, fake)


async def rows(tmp_path: Path, table: Table) -> list[dict[str, Any]]:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path}/t.db")
    try:
        async with engine.connect() as connection:
            result = await connection.execute(select(table).order_by(table.c.id))
            return [dict(row) for row in result.mappings()]
    finally:
        await engine.dispose()


# -- the install flow and events, end to end -------------------------------------------------------


@OAUTH_WARNING
async def test_installed_over_oauth_a_dm_is_answered_with_its_workspace_s_token(
    tmp_path: Path, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bolt and the SDK would take these from the environment if asked: they must not be.
    monkeypatch.setenv("SLACK_CLIENT_ID", "env-client-id")
    monkeypatch.setenv("SLACK_CLIENT_SECRET", "env-client-secret")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "env-signing-secret")
    fake_slack.add_user(NORA)
    fake_slack.add_oauth_code("north-code", NORTH, installer=NORA.id)
    async with oauth_gateway(tmp_path, fake_slack) as gw:
        browser = Installer(gw)
        query = await browser.begin()
        assert query["client_id"] == fake_slack.app.client_id
        assert query["scope"] == ",".join(name for name, _ in SCOPES)
        assert query["redirect_uri"] == f"{gw.server.make_url('/slack/echo/oauth_redirect')}"
        assert query["state"] and browser.cookie == f"{COOKIE}={query['state']}"

        status, page = await browser.come_back(code="north-code", state=query["state"])
        assert status == 200 and "Thank you!" in page
        [exchange] = fake_slack.calls("oauth.v2.access", ok=True)
        assert exchange.args["code"] == "north-code"
        [installed] = await rows(tmp_path, schema.slack_installations)
        assert installed["client_id"] == fake_slack.app.client_id
        assert (installed["team_id"], installed["user_id"]) == (NORTH.team_id, NORA.id)
        [bot] = await rows(tmp_path, schema.slack_bots)
        assert (bot["team_id"], bot["bot_token"]) == (NORTH.team_id, NORTH.token)
        assert await rows(tmp_path, schema.slack_oauth_states) == []  # consumed

        said = fake_slack.user_message(NORA, "hello from the north", bot=NORTH)
        assert (await gw.post_event(said))[0] == 200
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.ok and post.token == NORTH.token
        assert post.args["text"] == "hello from the north"
        assert post.args["channel"] == said["event"]["channel"]
        [profile] = fake_slack.calls("users.info")  # the inbound handlers' calls, too
        assert profile.token == NORTH.token


@OAUTH_WARNING
async def test_two_workspaces_each_get_their_own_bot(tmp_path: Path, fake_slack: FakeSlack) -> None:
    for user in (NORA, SAM):
        fake_slack.add_user(user)
    fake_slack.add_oauth_code("north-code", NORTH, installer=NORA.id)
    fake_slack.add_oauth_code("south-code", SOUTH, installer=SAM.id)
    async with oauth_gateway(tmp_path, fake_slack) as gw:
        await Installer(gw).install("north-code")
        await Installer(gw).install("south-code")
        assert [b["team_id"] for b in await rows(tmp_path, schema.slack_bots)] == [
            NORTH.team_id,
            SOUTH.team_id,
        ]
        north = fake_slack.user_message(NORA, "north here", bot=NORTH)
        south = fake_slack.user_message(SAM, "south here", bot=SOUTH)
        assert (await gw.post_event(north))[0] == 200
        assert (await gw.post_event(south))[0] == 200
        posts = await fake_slack.wait_for("chat.postMessage", 2)
        by_text = {post.args["text"]: (post.token, post.args["channel"]) for post in posts}
        assert by_text == {
            "north here": (NORTH.token, north["event"]["channel"]),
            "south here": (SOUTH.token, south["event"]["channel"]),
        }
        assert all(post.ok for post in posts)


@OAUTH_WARNING
async def test_a_bad_state_is_refused_and_nothing_is_installed(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    fake_slack.add_oauth_code("north-code", NORTH)
    async with oauth_gateway(tmp_path, fake_slack) as gw:
        browser = Installer(gw)
        state = (await browser.begin())["state"]

        forged = Installer(gw)
        forged.cookie = f"{COOKIE}=forged-state"  # a state we never issued, cookie and all
        status, page = await forged.come_back(code="north-code", state="forged-state")
        assert status == 401 and "invalid_state" in page

        stranger = Installer(gw)  # our state, in a browser it was not given to
        status, page = await stranger.come_back(code="north-code", state=state)
        assert status == 400 and "invalid_browser" in page

        assert fake_slack.calls("oauth.v2.access") == []
        assert await rows(tmp_path, schema.slack_installations) == []

        status, _ = await browser.come_back(code="north-code", state=state)
        assert status == 200
        again, page = await browser.come_back(code="north-code", state=state)
        assert again == 401 and "invalid_state" in page  # a state is good once
        assert len(await rows(tmp_path, schema.slack_installations)) == 1


@OAUTH_WARNING
async def test_a_workspace_without_the_app_is_not_answered(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    for user in (NORA, SAM):
        fake_slack.add_user(user)
    fake_slack.add_bot(SOUTH)  # Slack knows the bot, but it was never installed through us
    fake_slack.add_oauth_code("north-code", NORTH, installer=NORA.id)
    async with oauth_gateway(tmp_path, fake_slack) as gw:
        status, _ = await gw.post_event(fake_slack.user_message(SAM, "anyone?", bot=SOUTH))
        assert status == 200  # bolt answers, so Slack does not retry

        await Installer(gw).install("north-code")
        uninstalled = event_callback(
            {"type": "app_uninstalled", "event_ts": str(time.time())},
            team_id=NORTH.team_id,
            api_app_id=NORTH.app_id,
        )
        assert (await gw.post_event(uninstalled))[0] == 200
        assert await rows(tmp_path, schema.slack_bots) == []
        assert await rows(tmp_path, schema.slack_installations) == []
        status, _ = await gw.post_event(fake_slack.user_message(NORA, "still there?", bot=NORTH))
        assert status == 200

        # a later message, in a workspace that installs the app now, is answered
        fake_slack.add_oauth_code("south-code", SOUTH, installer=SAM.id)
        await Installer(gw).install("south-code")
        status, _ = await gw.post_event(fake_slack.user_message(SAM, "marker", bot=SOUTH))
        assert status == 200

        def posted() -> list[str]:
            return [c.args["text"] for c in fake_slack.calls("chat.postMessage")]

        await eventually(lambda: "marker" in posted(), what="the later message answered")
        assert [text for text in posted() if text != "marker"] == []
        threads = (await gw.api.get("/api/v1/threads?participant=role:echo")).body["threads"]
        said = [
            e.get("text")
            for thread in threads
            for e in (await gw.api.timeline(thread["id"]))["events"]
            if e["kind"] == "message"
        ]
        assert set(said) == {"marker"}  # nothing from either before was recorded


async def test_install_routes_are_only_for_apps_installed_over_oauth(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    from tests.slack.dm_gateway import slack_gateway

    async with slack_gateway(tmp_path, fake_slack) as gw:
        for path in ("/slack/echo/install", "/slack/nobody/install", "/slack/echo/oauth_redirect"):
            async with gw.http.get(gw.server.make_url(path), allow_redirects=False) as resp:
                assert resp.status == 404
                code = (await resp.json())["error"]["code"]
                assert code == ("unknown_role" if "nobody" in path else "not_installed_over_oauth")


# -- the role's manifest ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slack", "error"),
    [
        (
            "{signing_secret: S, bot_token: B, client_id: C, client_secret: D}",
            "slack.client_id: give bot_token (one workspace) or client_id and client_secret",
        ),
        ("{signing_secret: S}", "slack.bot_token: needed, unless the app is installed over OAuth"),
        ("{signing_secret: S, client_id: C}", "slack.client_secret: client_id needs it"),
        ("{signing_secret: S, client_secret: D}", "slack.client_id: client_secret needs it"),
        ("{client_id: C, client_secret: D}", "slack.signing_secret: mode http needs it"),
        (
            "{mode: socket, app_token: A, client_id: C, client_secret: D}",
            "slack.client_id: installing over OAuth needs mode http",
        ),
        (
            "{signing_secret: S, client_id: xoxb-1, client_secret: D}",
            "slack.client_id: Value error, must be the NAME",
        ),
    ],
)
def test_a_slack_section_is_installed_one_way_and_errors_name_the_field(
    tmp_path: Path, slack: str, error: str
) -> None:
    path = tmp_path / "echo.yaml"
    path.write_text(
        f"name: echo\ndisplay_name: Echo\nruntime: {{kind: builtin, agent: echo}}\nslack: {slack}\n"
    )
    with pytest.raises(ManifestError) as refused:
        load_role(path)
    assert refused.value.message.startswith(f"{path}: {error}")


def test_an_oauth_slack_section_names_its_settings() -> None:
    slack = oauth_role().slack
    assert slack is not None and slack.oauth and slack.bot_token is None
    assert slack.setting_names == (SIGNING, CLIENT_ID, CLIENT_SECRET)


# -- the stores on our tables --------------------------------------------------------------------


async def test_the_sdk_stores_work_on_the_migrated_tables(database_url: str) -> None:
    engine = open_engine(database_url)
    try:
        store = AsyncSQLAlchemyInstallationStore(client_id="C1", engine=engine)
        other_app = AsyncSQLAlchemyInstallationStore(client_id="C2", engine=engine)
        await store.async_save(
            Installation(
                app_id="A1",
                team_id="T1",
                team_name="One",
                bot_token="xoxb-1",
                bot_id="B1",
                bot_user_id="U0BOT",
                bot_scopes="chat:write",
                bot_refresh_token="xoxe-1-r",
                bot_token_expires_in=3600,
                user_id="U1",
            )
        )
        found = await store.async_find_bot(enterprise_id=None, team_id="T1")
        assert found is not None and found.bot_token == "xoxb-1"
        assert found.bot_refresh_token == "xoxe-1-r"
        assert found.bot_token_expires_at is not None
        assert abs(found.bot_token_expires_at - (time.time() + 3600)) < 60  # naive UTC, read back
        installation = await store.async_find_installation(enterprise_id=None, team_id="T1")
        assert installation is not None and installation.user_id == "U1"
        assert await other_app.async_find_bot(enterprise_id=None, team_id="T1") is None

        states = AsyncSQLAlchemyOAuthStateStore(expiration_seconds=60, engine=engine)
        state = await states.async_issue()
        assert await states.async_consume(state) is True
        assert await states.async_consume(state) is False
        expired = await AsyncSQLAlchemyOAuthStateStore(
            expiration_seconds=-1, engine=engine
        ).async_issue()
        assert await states.async_consume(expired) is False
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    "table",
    [
        AsyncSQLAlchemyInstallationStore(client_id="C", engine=None).installations,  # type: ignore[arg-type]
        AsyncSQLAlchemyInstallationStore(client_id="C", engine=None).bots,  # type: ignore[arg-type]
        AsyncSQLAlchemyOAuthStateStore(expiration_seconds=1, engine=None).oauth_states,  # type: ignore[arg-type]
    ],
    ids=lambda table: table.name,
)
def test_our_tables_are_the_sdk_s(table: Table) -> None:
    """When a new slack_sdk changes its tables, this fails: the migrations must follow."""
    ours = schema.metadata.tables[table.name]

    def columns(t: Table) -> list[tuple[str, str, bool, bool]]:
        return [(c.name, repr(c.type), c.nullable is True, c.primary_key) for c in t.columns]

    def indexes(t: Table) -> set[tuple[str | None, tuple[str, ...]]]:
        return {(i.name, tuple(c.name for c in i.columns)) for i in t.indexes}

    assert columns(ours) == columns(table)
    assert indexes(ours) == indexes(table)


# -- a workspace's client --------------------------------------------------------------------------


@OAUTH_WARNING
async def test_clients_rotate_an_expiring_token_and_drop_a_refused_one(
    database_url: str, fake_slack: FakeSlack
) -> None:
    fake_slack.token_rotation = True
    fake_slack.add_oauth_code("north-code", NORTH)
    app = fake_slack.app
    api = web_client(None, fake_slack.api_url)
    granted = await api.oauth_v2_access(
        client_id=app.client_id, client_secret=app.client_secret, code="north-code"
    )
    engine = open_engine(database_url)
    try:
        store = AsyncSQLAlchemyInstallationStore(client_id=app.client_id, engine=engine)
        await store.async_save(
            Installation(
                app_id=app.app_id,
                team_id=NORTH.team_id,
                bot_token=granted["access_token"],
                bot_id=NORTH.bot_id,
                bot_user_id=NORTH.user_id,
                bot_refresh_token=granted["refresh_token"],
                bot_token_expires_at=int(time.time()) + 60,  # within the rotation margin
                user_id="U0INSTALLER",
            )
        )
        rotator = AsyncTokenRotator(
            client_id=app.client_id, client_secret=app.client_secret, client=api
        )
        clients = Clients.installed(fake_slack.api_url, store, rotator)

        client = await clients.for_team(NORTH.team_id)
        assert client.token is not None and client.token != NORTH.token
        assert client.token.startswith("xoxe.xoxb-")
        stored = await store.async_find_bot(enterprise_id=None, team_id=NORTH.team_id)
        assert stored is not None and stored.bot_token == client.token
        assert await clients.for_team(NORTH.team_id) is client  # kept: no second rotation
        refreshes = fake_slack.calls("oauth.v2.access", ok=True)
        assert [c.args.get("grant_type") for c in refreshes] == [None, "refresh_token"]
        posted = await client.chat_postMessage(
            channel=fake_slack.dm_channel(NORA, bot=NORTH), text="hi"
        )
        assert posted["ok"]

        clients.refused(NORTH.team_id, client, "ratelimited")  # not about the token: kept
        assert await clients.for_team(NORTH.team_id) is client
        clients.refused(NORTH.team_id, client, "token_revoked")
        with pytest.raises(NotInstalled):  # the store has nothing better
            await clients.for_team(NORTH.team_id)
        with pytest.raises(NotInstalled):
            await clients.for_team("T0NOBODY01")

        one = AsyncWebClient(token="xoxb-one")
        assert await Clients.one_workspace(one).for_team("T0ANYTEAM1") is one
    finally:
        await engine.dispose()


@OAUTH_WARNING
async def test_a_workspace_that_removed_the_app_holds_up_no_other(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    for user in (NORA, SAM):
        fake_slack.add_user(user)
    fake_slack.add_oauth_code("north-code", NORTH, installer=NORA.id)
    fake_slack.add_oauth_code("south-code", SOUTH, installer=SAM.id)
    async with oauth_gateway(tmp_path, fake_slack) as gw:
        await Installer(gw).install("north-code")
        await Installer(gw).install("south-code")
        await gw.post_event(fake_slack.user_message(NORA, "north here", bot=NORTH))
        await gw.post_event(fake_slack.user_message(SAM, "south here", bot=SOUTH))
        await fake_slack.wait_for("chat.postMessage", 2, ok=True)

        uninstalled = event_callback(
            {"type": "app_uninstalled", "event_ts": str(time.time())},
            team_id=NORTH.team_id,
            api_app_id=NORTH.app_id,
        )
        assert (await gw.post_event(uninstalled))[0] == 200
        fake_slack.expire_token(NORTH.token)  # and Slack no longer takes its token
        by_first_words = {}
        for thread in (await gw.api.get("/api/v1/threads?participant=role:echo")).body["threads"]:
            events = (await gw.api.timeline(thread["id"]))["events"]
            first = next(e["text"] for e in events if e["kind"] == "message")
            by_first_words[first] = thread["id"]
        # The role speaks up in both: north's first, then south's.
        await gw.api.say(by_first_words["north here"], "role:echo", "news for the north")
        await gw.api.say(by_first_words["south here"], "role:echo", "news for the south")

        posts = await fake_slack.wait_for("chat.postMessage", 3, ok=True, within=10)
        assert [(p.token, p.args["text"]) for p in posts[2:]] == [
            (SOUTH.token, "news for the south")
        ]
        refused = fake_slack.calls("chat.postMessage", ok=False)
        assert [(c.token, c.response["error"]) for c in refused] == [(NORTH.token, "token_expired")]
