"""Housekeeping in the running gateway: on its interval, delivery receipts older than
`receipt_days` are deleted, counted in `rolecall_records_pruned_total` and logged; only webhook
sources whose signature covers its time lose theirs (the rest of which rows go and which stay is
tests/contract/test_housekeeping.py's)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from channels.edge.requests import DATABASE_KEY
from core.model.webhooks import Source, SourceKind, map_github
from core.storage.housekeeping_store import Pruned
from core.storage.slack_store import SlackDelivery
from gateway.settings import Settings
from tests.api.conftest import Api
from tests.api.test_api_observability import sample
from tests.settings import make_settings
from tests.waiting import eventually
from tests.webhooks.conftest import SECRETS, write_sources


@pytest.fixture
def settings(tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """`api`'s gateway, with webhook sources, keeping receipts for about two seconds and looking
    every second."""
    for name, value in SECRETS.items():  # the sources' secrets, as `serve` reads them
        monkeypatch.setenv(name, value)
    (tmp_path / "roles").mkdir()
    return make_settings(
        tmp_path,
        database_url=sqlite_url,
        roles_dir=tmp_path / "roles",
        sources_dir=write_sources(tmp_path / "sources"),  # gh, tracker (standard), forms
        receipt_days=2 / 86_400,
        housekeeping_every=1,
    )


async def test_old_receipts_are_deleted_counted_and_logged(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rolecall.housekeeping")
    db = api.server.app[DATABASE_KEY]
    assert await db.slack.seen(SlackDelivery("Ev1", "echo", "T1", "D1"))

    async def pruned() -> float | None:
        text = (await api.get("/metrics", token=None)).text
        return sample(text, "rolecall_records_pruned_total", table="slack_events")

    assert await eventually(pruned, within=10) == 1.0
    assert not await db.slack.delivered("Ev1")
    said = [r.getMessage() for r in caplog.records if r.name == "rolecall.housekeeping"]
    assert said == ["housekeeping deleted 1 rows: 1 from slack_events"]


async def test_only_sources_that_sign_their_time_lose_their_receipts(api: Api) -> None:
    db = api.server.app[DATABASE_KEY]
    gh = Source(name="gh", kind=SourceKind.GITHUB, secret="GH_WEBHOOK_SECRET")
    ping = map_github(gh, "ping", {})
    for source in ("gh", "tracker", "forms"):
        await db.webhooks.receive(source, "d-1", ping)

    async def tracker_pruned() -> bool:
        return not await db.webhooks.delivered("tracker", "d-1")

    assert await eventually(tracker_pruned, within=10)
    # a GitHub or generic signature has no time: only the receipt refuses a replayed delivery
    assert await db.webhooks.delivered("gh", "d-1")
    assert await db.webhooks.delivered("forms", "d-1")


async def test_a_failed_pass_is_logged_and_the_next_one_tries_again(
    api: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="rolecall.housekeeping")
    db = api.server.app[DATABASE_KEY]
    prune = db.housekeeping.prune
    failures: list[int] = []

    async def fails_once(**kwargs: Any) -> Pruned:
        if not failures:
            failures.append(1)
            raise OSError("disk I/O error")
        return await prune(**kwargs)

    monkeypatch.setattr(db.housekeeping, "prune", fails_once)
    assert await db.slack.seen(SlackDelivery("Ev3", "echo", "T1", "D1"))

    async def pruned() -> bool:
        return not await db.slack.delivered("Ev3")

    assert await eventually(pruned, within=10)

    def said() -> list[str]:  # the pass logs what it deleted just after its commit
        return [r.getMessage() for r in caplog.records if r.name == "rolecall.housekeeping"]

    deleted = "housekeeping deleted 1 rows: 1 from slack_events"
    await eventually(lambda: deleted in said(), what="the second pass's log line")
    assert said()[0] == "housekeeping failed; trying again in 1 s"
    assert deleted in said()[1:]
