"""Housekeeping keeps the audit trail for `ROLECALL_AUDIT_RETENTION` days, on every backend: a
pass (on the replica holding housekeeping) deletes the records older than that — counted in
`rolecall_records_pruned_total{table="audit_records"}` and logged — and none younger; without
the setting, nothing ever goes. The time is driven, never waited for."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from channels.edge.leasing import ONE_PROCESS
from core.model.audit import Action
from core.storage import Database, open_database
from gateway.housekeeping import AUDIT_TABLE, pass_if_held, prune_audit
from gateway.metrics import Metrics
from tests.settings import make_settings


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def done(n: int) -> Action:
    return Action(actor="ci", client="127.0.0.1", action="run.cancel", detail={"n": n})


def pruned(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value(
        "rolecall_records_pruned_total", {"table": AUDIT_TABLE}
    )


async def positions(db: Database) -> list[int]:
    return [r.position for r in (await db.audit.page(limit=100)).records]


async def test_a_pass_deletes_the_records_past_the_retention_and_no_other(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rolecall.housekeeping")
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    settings = make_settings(tmp_path, database_url=database_url, audit_retention=30)
    metrics = Metrics()
    try:
        for n in range(3):  # 31 days before the pass
            await db.audit.record(done(n))
        clock.now += timedelta(days=2)
        await db.audit.record(done(3))  # 29 days before it
        clock.now += timedelta(days=29)

        leasing = ONE_PROCESS.leasing(db.leases)
        assert await pass_if_held(db, settings, metrics, (), leasing, roles={})

        assert await positions(db) == [4]
        assert pruned(metrics) == 3
        said = [r.getMessage() for r in caplog.records if r.name == "rolecall.housekeeping"]
        assert len(said) == 1 and said[0].startswith("housekeeping deleted 3 audit records")
        assert await prune_audit(db, settings, metrics) == 0
    finally:
        await db.close()


async def test_without_a_retention_the_trail_is_kept_forever(
    database_url: str, tmp_path: Path
) -> None:
    clock = Clock()
    db = await open_database(database_url, clock=clock)
    settings = make_settings(tmp_path, database_url=database_url)
    metrics = Metrics()
    try:
        await db.audit.record(done(0))
        clock.now += timedelta(days=36_500)
        assert settings.audit_retention is None
        assert await prune_audit(db, settings, metrics) == 0
        assert await positions(db) == [1]
        assert pruned(metrics) is None
    finally:
        await db.close()
