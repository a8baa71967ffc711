"""The overview's reads of the last hour and of what waits to be delivered, each bounded by an
index so that it costs the same with ten thousand conversations and a hundred thousand events.

- `finished_turns_since`: the turns that finished since a time, with their run's role — a range
  of `ix_turns_finished_at` (the hour's turns only, never the whole transcript), each turn's run
  by the primary key of `runs`.
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

from sqlalchemy import Connection, bindparam, func, select

from core.model.activity import FinishedTurn
from core.model.endpoints import EndpointStatus, Filters
from core.model.runs.run import TurnOutcome
from core.storage import schema
from core.storage.positions import handed_out

_turns, _runs = schema.turns, schema.runs
_cursors, _outbox, _ep = schema.slack_cursors, schema.slack_outbox, schema.endpoints

FINISHED_SINCE = (
    select(
        _turns.c.run_id, _runs.c.role, _turns.c.started_at, _turns.c.finished_at, _turns.c.outcome
    )
    .join(_runs, _runs.c.id == _turns.c.run_id)
    .where(_turns.c.finished_at >= bindparam("since"))
)
"""By `ix_turns_finished_at` (a range from `since`), then `runs` by its primary key."""
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


def finished_turns_since(connection: Connection, since: int) -> list[FinishedTurn]:
    rows = connection.execute(FINISHED_SINCE, {"since": since})
    return [
        FinishedTurn(
            run_id=row.run_id,
            role=row.role,
            started_at=row.started_at,
            finished_at=row.finished_at,
            failed=row.outcome == TurnOutcome.FAILED.value,
        )
        for row in rows
    ]


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
