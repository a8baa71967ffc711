"""Housekeeping in the running gateway: every `ROLECALL_HOUSEKEEPING_EVERY` seconds (an hour by
default; first a minute after start), delete the delivery receipts older than
`ROLECALL_RECEIPT_DAYS` — Slack's, and those of the webhook sources whose signature covers its
time (`kind: standard`) — the expired Slack OAuth states, and the rate buckets idle for longer
than they take to fill (`buckets_idle`; `core.storage.housekeeping_store`).

With replicas, a pass runs only on the replica holding the lease (`LeaseKind.HOUSEKEEPING`,
"prune"): each asks at each of its passes, and the first to ask keeps it while it lives (its
heartbeat renews it); when it stops, the next replica to ask takes it.

Approvals whose time has passed unanswered are resolved as `expired` every
`EXPIRY_SWEEP_EVERY` seconds, by the same replica: a run that waits for one expires it itself at
its time, so the sweep is for the approvals nobody waits for (their run's replica died), and
they expire at most that late.

Each pass also deletes the audit records older than `ROLECALL_AUDIT_RETENTION` days (none by
default: the trail is kept forever), in batches like the rest (`prune_audit`), and then removes
what is past its retention — messages, memory, transcripts, Slack delivery records — for the
roles served here (`gateway.retention`; nothing to do when nothing has a limited retention).

Each pass logs one line when it deleted anything and counts what it deleted in
`rolecall_records_pruned_total{table}`. A pass that fails (the database away for a moment) is
logged and the next one tries again; housekeeping never stops the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Collection, Mapping
from datetime import timedelta

from aiohttp import web

from channels.edge.leasing import LeaseTerms, Leasing
from channels.edge.requests import DATABASE_KEY, ROLES_KEY
from channels.web.limits import BURST
from core.model.audit import retention
from core.model.errors import Conflict
from core.model.leases import LeaseKind
from core.model.roles import Role
from core.model.webhooks import Source
from core.storage import Database
from core.storage.housekeeping_store import BUCKETS_IDLE, Pruned
from gateway.metrics import METRICS_KEY, Metrics
from gateway.replica import REPLICA_KEY
from gateway.retention import expire_once
from gateway.settings import Settings, lease_terms

FIRST_PASS_AFTER = 60.0
"""Seconds from start to the first pass (at most the interval): start-up is busy enough."""

PRUNE = "prune"
"""The subject of the housekeeping lease."""

EXPIRY_SWEEP_EVERY = 5.0
"""Seconds between two sweeps for approvals past their expiry."""

log = logging.getLogger("rolecall.housekeeping")


def add_housekeeping(
    app: web.Application, settings: Settings, sources: Mapping[str, Source]
) -> None:
    """Run housekeeping while the gateway runs (after the database has opened)."""
    timed = frozenset(name for name, source in sources.items() if source.signs_its_time)
    leases = lease_terms(settings, app[REPLICA_KEY])
    app.cleanup_ctx.append(lambda app: _lifecycle(app, settings, timed, leases))


def buckets_idle(settings: Settings) -> timedelta:
    """How long an idle rate bucket is kept: an hour, or longer when the widget's posting rate
    takes longer than that to fill a bucket (a bucket that went is a full one)."""
    fill = timedelta(seconds=BURST / (settings.widget_post_rate / 60))
    return max(BUCKETS_IDLE, fill)


async def prune_once(
    database: Database, settings: Settings, metrics: Metrics, sources: Collection[str]
) -> Pruned:
    """One pass: delete what has outlived its time, count it, and say so when it was anything."""
    pruned = await database.housekeeping.prune(
        receipts_for=timedelta(days=settings.receipt_days),
        sources=sources,
        buckets_idle=buckets_idle(settings),
    )
    for kept, count in pruned.counts.items():
        if count:
            metrics.pruned.labels(table=kept.value).inc(count)
    if pruned.total:
        said = ", ".join(f"{n} from {kept.value}" for kept, n in pruned.counts.items() if n)
        log.info("housekeeping deleted %d rows: %s", pruned.total, said)
    return pruned


async def pass_if_held(
    database: Database,
    settings: Settings,
    metrics: Metrics,
    sources: Collection[str],
    leasing: Leasing,
    *,
    roles: Mapping[str, Role],
) -> Pruned | None:
    """A pass, on the replica that holds housekeeping (None: another one does); what is past
    its retention goes for `roles`, the roles served here."""
    if await leasing.hold(LeaseKind.HOUSEKEEPING, PRUNE) is None:
        return None
    pruned = await prune_once(database, settings, metrics, sources)
    await prune_audit(database, settings, metrics)
    await expire_once(database, roles, settings.retention, metrics)
    return pruned


AUDIT_TABLE = "audit_records"


async def prune_audit(database: Database, settings: Settings, metrics: Metrics) -> int:
    """Delete the audit records past `settings.audit_retention` (nothing when it is unset),
    count them and say so; how many went."""
    keep = retention(settings.audit_retention)
    if keep is None:
        return 0
    deleted = await database.audit.prune(keep=keep)
    if deleted:
        metrics.pruned.labels(table=AUDIT_TABLE).inc(deleted)
        days = settings.audit_retention
        log.info("housekeeping deleted %d audit records older than %g days", deleted, days)
    return deleted


async def expire_approvals(database: Database, *, batch: int = 100) -> int:
    """Resolve every approval past its expiry as `expired`, a batch at a time (one write batch
    each); how many this call expired (one answered or expired elsewhere meanwhile is left)."""
    expired = 0
    while due := await database.approvals.due(database.approvals.now(), limit=batch):
        ends = await asyncio.gather(
            *(database.approvals.expire(a, t) for a, t in due), return_exceptions=True
        )
        if failed := [
            e for e in ends if isinstance(e, BaseException) and not isinstance(e, Conflict)
        ]:
            raise failed[0]
        done = sum(1 for e in ends if not isinstance(e, BaseException))
        expired += done
        if len(due) < batch or not done:
            break
    return expired


async def _sweep_approvals(database: Database, leasing: Leasing) -> None:
    while True:
        await asyncio.sleep(EXPIRY_SWEEP_EVERY)
        try:
            held = await leasing.hold(LeaseKind.HOUSEKEEPING, PRUNE) is not None
            if held and (expired := await expire_approvals(database)):
                log.info("%d approvals expired unanswered", expired)
        except Exception:  # the next sweep tries again
            log.exception("the sweep for expired approvals failed; trying again")


async def _every(
    database: Database,
    settings: Settings,
    metrics: Metrics,
    sources: Collection[str],
    leasing: Leasing,
    roles: Mapping[str, Role],
) -> None:
    await asyncio.sleep(min(FIRST_PASS_AFTER, settings.housekeeping_every))
    while True:
        try:
            await pass_if_held(database, settings, metrics, sources, leasing, roles=roles)
        except Exception:  # the next pass tries again
            every = settings.housekeeping_every
            log.exception("housekeeping failed; trying again in %.0f s", every)
        await asyncio.sleep(settings.housekeeping_every)


async def _lifecycle(
    app: web.Application, settings: Settings, sources: Collection[str], leases: LeaseTerms
) -> AsyncIterator[None]:
    database = app[DATABASE_KEY]
    leasing = leases.leasing(database.leases)
    metrics, roles = app[METRICS_KEY], app[ROLES_KEY]
    tasks = [
        asyncio.create_task(_every(database, settings, metrics, sources, leasing, roles)),
        asyncio.create_task(_sweep_approvals(database, leasing)),
    ]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
