"""Two replicas on one PostgreSQL database serve one role's Slack app as one gateway: whichever
replica Slack sends a person's message to, the role's reply is posted once — not once per
replica — in the thread of what it answers, in order, by the replica holding the role's Slack
lease; when that one stops, the other takes the delivery over and goes on, posting nothing
twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from core.model.leases import LeaseKind
from core.storage.database import Database, open_database
from gateway.app import build_app
from tests.api.conftest import TOKEN
from tests.conftest import _empty_postgres
from tests.serving import free_port, serve
from tests.slack.dm_gateway import APP, BOT, SIGNING, SlackGateway, echo_role, slack_settings
from tests.slack.fake_slack import ALICE, FakeSlack
from tests.waiting import eventually

pytestmark = pytest.mark.postgres

WIDGET_KEY = "slack-replicas-widget-key-0123456789abcdef"
"""Replicas of one database share their widget key (or the second is refused at start)."""


@pytest.fixture
async def shared(postgres_database: str) -> AsyncIterator[Database]:
    """The one database both replicas serve, empty; the test's own look at it."""
    await _empty_postgres(postgres_database)
    database = await open_database(postgres_database)
    try:
        yield database
    finally:
        await database.close()


@asynccontextmanager
async def _replica(
    tmp_path: Path, name: str, fake: FakeSlack, database_url: str
) -> AsyncIterator[SlackGateway]:
    """The gateway with the `echo` role's Slack app, as replica `name` of the database."""
    var = tmp_path / name
    var.mkdir()
    port = free_port()
    replica = {"replica_id": name, "replica_timeout": 2.0, "widget_key": SecretStr(WIDGET_KEY)}
    settings = slack_settings(var, fake, port, database_url=database_url)
    settings = settings.model_copy(update=replica)  # the values as the settings hold them
    secrets = {SIGNING: fake.app.signing_secret, BOT: fake.bot.token, APP: fake.app.app_token}
    app = build_app(settings, api_token=TOKEN, roles={"echo": echo_role()}, secrets=secrets)
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        yield SlackGateway(server, http, fake)


async def _holder(db: Database) -> str:
    lease = await db.leases.get(LeaseKind.SLACK, "echo")
    return lease.holder if lease is not None and lease.held else ""


def _replies(fake: FakeSlack, n: int) -> list[tuple[str, str | None]] | None:
    posts = [(c.args["text"], c.args.get("thread_ts")) for c in fake.calls("chat.postMessage")]
    return posts if len(posts) >= n else None


async def test_each_reply_is_posted_once_by_one_replica_and_taken_over_when_it_stops(
    tmp_path: Path, fake_slack: FakeSlack, shared: Database, postgres_database: str
) -> None:
    async with AsyncExitStack() as a_serving, AsyncExitStack() as b_serving:
        a = await a_serving.enter_async_context(
            _replica(tmp_path, "a", fake_slack, postgres_database)
        )
        b = await b_serving.enter_async_context(
            _replica(tmp_path, "b", fake_slack, postgres_database)
        )
        replicas = {"a": a, "b": b}
        expected: list[tuple[str, str | None]] = []

        async def say(gw: SlackGateway, text: str) -> None:
            said = fake_slack.user_message(ALICE, text)
            status, _ = await gw.post_event(said)
            assert status == 200
            expected.append((text, said["event"]["ts"]))  # echoed, in the thread of it
            # One at a time: a reply answers the message before it.
            await eventually(lambda: _replies(fake_slack, len(expected)), what=f"{text!r} echoed")

        for i in range(10):
            await say((a, b)[i % 2], f"message {i}")
        holder = await eventually(lambda: _holder(shared))
        # Whatever the replica not holding the delivery might post would have come before
        # the next reply: one more message, through each replica.
        await say(a, "message 10")
        await say(b, "message 11")
        assert _replies(fake_slack, 0) == expected, "each reply once, in order, in its thread"

        # The holder stops cleanly: the other replica takes the delivery over.
        survivor = "b" if holder == "a" else "a"
        await (a_serving if holder == "a" else b_serving).aclose()
        for i in range(12, 16):
            await say(replicas[survivor], f"message {i}")
        assert await _holder(shared) == survivor
        assert _replies(fake_slack, 0) == expected, "each reply once, in order, in its thread"
        assert all(c.ok for c in fake_slack.calls("chat.postMessage"))
