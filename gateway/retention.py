"""Retention in the running gateway: at every housekeeping pass (`ROLECALL_HOUSEKEEPING_EVERY`,
an hour by default; first a minute after start), on the replica that holds housekeeping, remove
what is past its retention (`core.model.retention`): for every role served here, its messages,
memory, transcripts and Slack delivery records past the role's retention (the manifest's
`retention`, else the gateway's `ROLECALL_RETAIN_*`); then the messages of conversations no role
is in, past the default. Each kind goes in bounded write batches (`core.storage.retention_store`),
so the writer takes other work between them.

A pass logs one line when it removed anything and counts it in
`rolecall_records_pruned_total{table}` (`events`, `memory_entries`, `turns`, `slack_messages`).
A pass that fails is logged and the next one tries again.

Roles that other deployments on the same database serve (`ROLECALL_ALLOW_UNSERVED_ROLES`) are
theirs to expire: a gateway expires only what belongs to the roles it serves, and the messages
of conversations no role is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping

from aiohttp import web

from channels.edge.leasing import LeaseTerms, Leasing
from channels.edge.requests import DATABASE_KEY, ROLES_KEY
from core.model.leases import LeaseKind
from core.model.retention import Kept, Retention
from core.model.roles import Role
from core.storage import Database
from gateway.housekeeping import FIRST_PASS_AFTER, PRUNE
from gateway.metrics import METRICS_KEY, Metrics
from gateway.replica import REPLICA_KEY
from gateway.settings import Settings, lease_terms

log = logging.getLogger("rolecall.retention")

TABLES = {
    Kept.MESSAGES: "events",
    Kept.MEMORY: "memory_entries",
    Kept.TRANSCRIPTS: "turns",
    Kept.DELIVERIES: "slack_messages",
}
"""Where each kind of record is, as `rolecall_records_pruned_total` names it."""


def add_retention(app: web.Application, settings: Settings) -> None:
    """Expire what is past its retention while the gateway runs; nothing at all when no role
    and no default keeps anything for a limited time."""
    roles: Mapping[str, Role] = app[ROLES_KEY]
    default = settings.retention
    if default.keeps_everything and all(
        role.retention.rules.keeps_everything for role in roles.values()
    ):
        return
    leases = lease_terms(settings, app[REPLICA_KEY])
    app.cleanup_ctx.append(lambda app: _lifecycle(app, settings, leases))


async def expire_once(
    database: Database, roles: Mapping[str, Role], default: Retention, metrics: Metrics
) -> dict[Kept, int]:
    """One pass: remove what is past its retention, count it, and say so when it was anything."""
    removed = dict.fromkeys(Kept, 0)
    for role in roles.values():
        rules = role.retention.rules.over(default)
        for kept in Kept:
            age = rules.of(kept)
            if age is not None:
                removed[kept] += await database.retention.expire(kept, role.name, age)
    if (age := default.of(Kept.MESSAGES)) is not None:
        removed[Kept.MESSAGES] += await database.retention.expire(Kept.MESSAGES, None, age)
    for kept, count in removed.items():
        if count:
            metrics.pruned.labels(table=TABLES[kept]).inc(count)
    if total := sum(removed.values()):
        said = ", ".join(f"{n} {kept.value}" for kept, n in removed.items() if n)
        log.info("retention removed %d records past their time: %s", total, said)
    return removed


async def _every(
    database: Database,
    settings: Settings,
    roles: Mapping[str, Role],
    metrics: Metrics,
    leasing: Leasing,
) -> None:
    await asyncio.sleep(min(FIRST_PASS_AFTER, settings.housekeeping_every))
    while True:
        try:
            if await leasing.hold(LeaseKind.HOUSEKEEPING, PRUNE) is not None:
                await expire_once(database, roles, settings.retention, metrics)
        except Exception:  # the next pass tries again
            every = settings.housekeeping_every
            log.exception("retention failed; trying again in %.0f s", every)
        await asyncio.sleep(settings.housekeeping_every)


async def _lifecycle(
    app: web.Application, settings: Settings, leases: LeaseTerms
) -> AsyncIterator[None]:
    database = app[DATABASE_KEY]
    leasing = leases.leasing(database.leases)
    task = asyncio.create_task(
        _every(database, settings, app[ROLES_KEY], app[METRICS_KEY], leasing)
    )
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
