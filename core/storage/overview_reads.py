"""The overview's reads of the last hour and of what waits to be delivered, each bounded by an
index so that it costs the same with ten thousand conversations and a hundred thousand events.

- `hour_from`: the last hour (`core.model.activity`), counted by the database — the turns per
  minute and the failed ones, the two durations at their nearest ranks (an offset into the
  hour's durations in order), the failed turns and their runs per role. Each is a range of
  `ix_turns_finished_at_started_at_outcome_run_id`, which holds every column these read, so the
  turns' rows (their prompts and transcripts) are never read; only the failed turns' runs are
  looked up (by the primary key of `runs`), for their role. Its cost follows the hour's turns,
  not every turn ever taken, and no turn crosses into Python.
- `slack_backlog`: per role whose Slack delivery has started, how far its cursor is behind the
  head of the event stream (the head minus the cursor: positions are never reused, so that is
  about the number of events committed since, bound to a DM or not — a position given back by a
  rollback on PostgreSQL, or an event that retention deleted before the delivery reached it,
  still counts) and how many posts it meant and has not recorded (`slack_outbox`). The cursors
  are a row per role (their primary key), the heads where positions have got to
  (`core.storage.positions`), the outbox is grouped by `role`, the first column of its primary
  key. No event is read.
- `endpoint_backlog`: every outbound endpoint's status and how far behind the heads of the two
  streams its cursors are (the same subtraction, for the streams its kinds follow). This reads
  the whole `endpoints` table — an operator's registrations, a handful of rows — and no event.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Connection, Integer, bindparam, case, func, select

from core.model.activity import (
    MINUTE,
    Hour,
    Latency,
    RoleFailures,
    assemble,
    hour_until,
    rank_index,
)
from core.model.endpoints import EndpointStatus, Filters
from core.model.runs.run import TurnOutcome
from core.storage import schema
from core.storage.positions import handed_out

_turns, _runs = schema.turns, schema.runs
_cursors, _outbox, _ep = schema.slack_cursors, schema.slack_outbox, schema.endpoints

_FAILED = TurnOutcome.FAILED.value
_IN_HOUR = (_turns.c.finished_at >= bindparam("since", type_=BigInteger)) & (
    _turns.c.finished_at < bindparam("until", type_=BigInteger)
)
_SLOT = ((_turns.c.finished_at - bindparam("since", type_=BigInteger)) // MINUTE).label("slot")
_DURATION = case(
    (_turns.c.finished_at < _turns.c.started_at, 0),
    else_=_turns.c.finished_at - _turns.c.started_at,
).label("duration")

MINUTES = (
    select(_SLOT, func.count(), func.sum(case((_turns.c.outcome == _FAILED, 1), else_=0)))
    .where(_IN_HOUR)
    .group_by(_SLOT)
)
"""The hour's turns and failed turns per minute (a slot: 0 for the oldest minute)."""
DURATION_AT = (
    select(_DURATION)
    .where(_IN_HOUR)
    .order_by(_DURATION)
    .limit(1)
    .offset(bindparam("at", type_=Integer))
)
"""The duration at a rank of the hour's durations in ascending order."""
FAILURES = (
    select(_runs.c.role, func.count(), func.count(_turns.c.run_id.distinct()))
    .join(_runs, _runs.c.id == _turns.c.run_id)
    .where(_IN_HOUR, _turns.c.outcome == _FAILED)
    .group_by(_runs.c.role)
)
"""The hour's failed turns and the distinct runs they were in, per role."""
_INTENTS = select(_outbox.c.role, func.count()).group_by(_outbox.c.role)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackBacklog:
    role: str
    behind: int
    """Committed events past the role's Slack cursor."""
    intents: int
    """Posts meant and not yet recorded (or given up)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointBacklog:
    counts: dict[str, int]
    """Endpoints by status, every status present."""
    behind: int
    """Committed events past the cursors of the endpoints that are not disabled, summed over
    them (timeline events for those whose kinds follow the timeline, task events for those
    that follow tasks)."""
    behind_parked: int
    """The part of `behind` that waits on parked endpoints."""


def hour_from(connection: Connection, since: int) -> Hour:
    """The hour from `since` (`core.model.activity.hour_since`), counted in the database."""
    hour = {"since": since, "until": hour_until(since)}
    counts = [(int(slot), int(n), int(f)) for slot, n, f in connection.execute(MINUTES, hour)]
    turns = sum(n for _, n, _ in counts)

    def at(share: float) -> int:
        found = connection.execute(DURATION_AT, {**hour, "at": rank_index(turns, share)})
        value: int = found.scalar_one()
        return int(value)

    latency = Latency(p50=at(0.5), p95=at(0.95)) if turns else None
    failures = [
        RoleFailures(role=role, turns=int(n), runs=int(runs))
        for role, n, runs in connection.execute(FAILURES, hour)
    ]
    return assemble(since, counts, latency, failures)


def _stream_heads(connection: Connection) -> tuple[int, int]:
    heads = handed_out(connection)
    return heads.events, heads.tasks


def slack_backlog(connection: Connection) -> list[SlackBacklog]:
    """In role order."""
    head, _ = _stream_heads(connection)
    intents = {role: int(n) for role, n in connection.execute(_INTENTS)}
    cursors = {row.role: int(row.position) for row in connection.execute(select(_cursors))}
    return [
        SlackBacklog(
            role=role,
            behind=max(head - cursors[role], 0) if role in cursors else 0,
            intents=intents.get(role, 0),
        )
        for role in sorted(cursors.keys() | intents.keys())
    ]


def endpoint_backlog(connection: Connection) -> EndpointBacklog:
    head, task_head = _stream_heads(connection)
    counts = {status.value: 0 for status in EndpointStatus}
    behind = behind_parked = 0
    rows = connection.execute(
        select(_ep.c.status, _ep.c.kinds, _ep.c.position, _ep.c.task_position)
    )
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
        if row.status == EndpointStatus.DISABLED.value:
            continue
        filters = Filters(kinds=frozenset(row.kinds))
        waiting = (max(head - row.position, 0) if filters.wants_timeline else 0) + (
            max(task_head - row.task_position, 0) if filters.wants_tasks else 0
        )
        behind += waiting
        if row.status == EndpointStatus.PARKED.value:
            behind_parked += waiting
    return EndpointBacklog(counts=counts, behind=behind, behind_parked=behind_parked)
