"""Retention in the running gateway: at every housekeeping pass (`gateway.housekeeping`:
`ROLECALL_HOUSEKEEPING_EVERY`, an hour by default; first a minute after start), on the replica
that holds housekeeping, `expire_once` removes what is past its retention
(`core.model.retention`): for every role served here, its messages, memory, transcripts and Slack
delivery records past the role's retention (the manifest's `retention`, else the gateway's
`ROLECALL_RETAIN_*`); then the messages of conversations no role is in, past the default. Each
kind goes in bounded write batches (`core.storage.retention_store`), so the writer takes other
work between them. When no role and no default keeps anything for a limited time, a pass asks
nothing of the database.

A pass logs one line when it removed anything and counts it in
`rolecall_records_pruned_total{table}` (`events`, `memory_entries`, `turns`, `slack_messages`).
A pass that fails is housekeeping's to log, and the next one tries again.

Roles that other deployments on the same database serve (`ROLECALL_ALLOW_UNSERVED_ROLES`) are
theirs to expire: a gateway expires only what belongs to the roles it serves, and the messages
of conversations no role is in.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from core.model.retention import Kept, Retention
from core.model.roles import Role
from core.storage import Database
from gateway.metrics import Metrics

log = logging.getLogger("rolecall.retention")

TABLES = {
    Kept.MESSAGES: "events",
    Kept.MEMORY: "memory_entries",
    Kept.TRANSCRIPTS: "turns",
    Kept.DELIVERIES: "slack_messages",
}
"""Where each kind of record is, as `rolecall_records_pruned_total` names it."""


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
