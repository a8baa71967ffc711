"""The Slack workspaces of a role's app and their health, as the gateway has recorded them.

A role's app knows a workspace (a Slack team) by any of: its installation over OAuth
(`slack_bots`, the SDK's rows of the app's `client_id`), a DM bound there
(`slack_conversations`), an event received from it (`slack_events.team_id`), or a refusal of a
call made there (`slack_errors`). An app installed in one workspace with a bot token has no
installation rows: its workspace is known once a person has written to it.

What each workspace's health is made of, and where it comes from:

- `last_event_at`: the latest Events API delivery from it (its receipt, kept for
  `ROLECALL_RECEIPT_DAYS`), or the latest message a person wrote there, whichever is later
  (messages are kept as long as the role's retention keeps them);
- `last_post_at`: when Slack last accepted a post of the role's (its `ts` was recorded);
- `error`: the latest refusal Slack answered a post, update or deletion there with
  (`SlackError`: `token_revoked`, `channel_not_found`, …), written by the delivery;
- `installed`: over OAuth, whether an installation is kept (an uninstall or a revocation Slack
  tells the app of deletes it); None for an app installed with a bot token.

`health` is a judgement of those facts (`SlackWorkspace.health`). Every read is by the role (and
the page's teams): the indexes of the tables above, never the timeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy import Connection, func, select, union

from core.storage import schema
from core.storage.rows import to_micros

_ev, _cv, _m, _err, _bots = (
    schema.slack_events,
    schema.slack_conversations,
    schema.slack_messages,
    schema.slack_errors,
    schema.slack_bots,
)

Health = Literal["ok", "failing", "not_installed", "quiet"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackError:
    code: str
    """Slack's error code (`token_revoked`), or `http_<status>` when Slack answered no code."""
    method: str
    at: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackWorkspace:
    team_id: str
    team_name: str | None
    installed: bool | None
    installed_at: int | None
    dms: int
    last_event_at: int | None
    last_post_at: int | None
    error: SlackError | None

    @property
    def health(self) -> Health:
        """`not_installed`: installed over OAuth once, no installation kept now; `failing`: the
        latest word Slack had for the role's calls there is a refusal (no post accepted since);
        `ok`: heard from or posted to, with no refusal since the last post; `quiet`: nothing
        yet."""
        if self.installed is False:
            return "not_installed"
        if self.error is not None and (
            self.last_post_at is None or self.error.at > self.last_post_at
        ):
            return "failing"
        if self.last_event_at is not None or self.last_post_at is not None:
            return "ok"
        return "quiet"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspacePage:
    workspaces: list[SlackWorkspace]
    next: str | None
    """The `after` for the following page (None: no more)."""


def _micros(at: datetime | None) -> int | None:
    """The SDK's naive UTC datetimes as microseconds."""
    return to_micros(at.replace(tzinfo=UTC)) if at is not None else None


def _team_ids(
    connection: Connection, role: str, client_id: str | None, after: str | None, limit: int
) -> list[str]:
    sources = [
        select(_cv.c.team_id.label("team_id")).where(_cv.c.role == role),
        select(_ev.c.team_id).where(_ev.c.role == role, _ev.c.team_id.is_not(None)),
        select(_err.c.team_id).where(_err.c.role == role),
    ]
    if client_id is not None:
        sources.append(
            select(_bots.c.team_id).where(
                _bots.c.client_id == client_id, _bots.c.team_id.is_not(None)
            )
        )
    known = union(*sources).subquery()
    query = select(known.c.team_id).order_by(known.c.team_id).limit(limit)
    if after is not None:
        query = query.where(known.c.team_id > after)
    return [str(team) for team in connection.execute(query).scalars()]


def workspaces(
    connection: Connection,
    role: str,
    *,
    client_id: str | None,
    after: str | None,
    limit: int,
) -> WorkspacePage:
    """The role's workspaces after the team id `after`, `limit` at most. `client_id`: the app's
    OAuth client id, for an app installed over OAuth (None: installed with a bot token)."""
    teams = _team_ids(connection, role, client_id, after, limit + 1)
    more, teams = len(teams) > limit, teams[:limit]
    if not teams:
        return WorkspacePage(workspaces=[], next=None)
    bots: dict[str, tuple[str | None, int | None]] = {}
    if client_id is not None:
        rows = connection.execute(
            select(_bots.c.team_id, _bots.c.team_name, _bots.c.installed_at)
            .where(_bots.c.client_id == client_id, _bots.c.team_id.in_(teams))
            .order_by(_bots.c.installed_at)
        )
        bots = {r.team_id: (r.team_name, _micros(r.installed_at)) for r in rows}  # the newest
    dms = {
        str(team): int(count)
        for team, count in connection.execute(
            select(_cv.c.team_id, func.count())
            .where(_cv.c.role == role, _cv.c.team_id.in_(teams))
            .group_by(_cv.c.team_id)
        )
    }
    received = {
        str(team): int(at)
        for team, at in connection.execute(
            select(_ev.c.team_id, func.max(_ev.c.received_at))
            .where(_ev.c.role == role, _ev.c.team_id.in_(teams))
            .group_by(_ev.c.team_id)
        )
    }
    said: dict[str, int] = {}
    posted: dict[str, int] = {}
    for team, outbound, at in connection.execute(
        select(_cv.c.team_id, _m.c.outbound, func.max(_m.c.created_at))
        .join(_cv, (_cv.c.role == _m.c.role) & (_cv.c.channel_id == _m.c.channel_id))
        .where(_m.c.role == role, _cv.c.team_id.in_(teams))
        .group_by(_cv.c.team_id, _m.c.outbound)
    ):
        (posted if outbound else said)[team] = int(at)
    errors = {
        r.team_id: SlackError(code=r.code, method=r.method, at=int(r.at))
        for r in connection.execute(
            select(_err).where(_err.c.role == role, _err.c.team_id.in_(teams))
        )
    }
    found = []
    for team in teams:
        name, installed_at = bots.get(team, (None, None))
        heard = [at for at in (received.get(team), said.get(team)) if at is not None]
        found.append(
            SlackWorkspace(
                team_id=team,
                team_name=name,
                installed=(team in bots) if client_id is not None else None,
                installed_at=installed_at,
                dms=int(dms.get(team, 0)),
                last_event_at=max(heard) if heard else None,
                last_post_at=posted.get(team),
                error=errors.get(team),
            )
        )
    return WorkspacePage(workspaces=found, next=teams[-1] if more else None)
