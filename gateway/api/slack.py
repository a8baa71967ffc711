"""The roles' Slack apps and the workspaces they are installed in, with each one's health.

    GET /api/v1/slack                               every role's Slack app: how it is
                                                    installed, the settings holding its
                                                    secrets (by name), its delivery's progress
    GET /api/v1/slack/{role}/workspaces[?after=TEAM&limit=N]
                                                    its workspaces in team id order, paged,
                                                    each with its health

A workspace is known to the gateway by its installation (over OAuth), a DM bound there, an
event received from it, or a refusal Slack answered there; an app installed in one workspace
with a bot token shows that workspace once a person has written to it. Health
(`core.storage.slack_reads`): the last event received, the last post Slack accepted, the latest
refusal of a post, update or deletion (`token_revoked`, and when) — `ok`, `failing`,
`not_installed` or `quiet`. No token or secret is ever answered: the settings are named, their
values are not read here.

404 `role_not_found` for an unknown role, `no_slack_app` for a role without a `slack:` section.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, ROLES_KEY, query_int, read_query
from channels.slack.routes import SLACK_KEY
from core.model.errors import InvalidInput, NotFound
from core.model.roles import Role
from core.model.timeline import rfc3339
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from core.storage.rows import from_micros
from core.storage.slack_reads import SlackWorkspace

routes = web.RouteTableDef()

SETTINGS = ("signing_secret", "bot_token", "app_token", "client_id", "client_secret")
TEAM_MAX = 32


def _at(micros: int | None) -> str | None:
    return rfc3339(from_micros(micros)) if micros is not None else None


def app_json(role: Role, cursor: int | None, behind: int, intents: int) -> dict[str, Any]:
    slack = role.slack
    assert slack is not None
    named = {name: getattr(slack, name) for name in SETTINGS}
    return {
        "role": role.name,
        "display_name": role.display_name,
        "mode": slack.mode,
        "installed": "oauth" if slack.oauth else "bot_token",
        "settings": {name: setting for name, setting in named.items() if setting is not None},
        "install_path": f"/slack/{role.name}/install" if slack.oauth else None,
        "delivery": {"cursor": cursor, "behind": behind, "intents": intents},
    }


def workspace_json(workspace: SlackWorkspace) -> dict[str, Any]:
    error = workspace.error
    return {
        "team_id": workspace.team_id,
        "team_name": workspace.team_name,
        "installed": workspace.installed,
        "installed_at": _at(workspace.installed_at),
        "dms": workspace.dms,
        "last_event_at": _at(workspace.last_event_at),
        "last_post_at": _at(workspace.last_post_at),
        "error": (
            {"code": error.code, "method": error.method, "at": _at(error.at)}
            if error is not None
            else None
        ),
        "health": workspace.health,
    }


@routes.get("/api/v1/slack")
async def list_apps(request: web.Request) -> web.Response:
    read_query(request, [])
    roles = request.app[ROLES_KEY]
    database = request.app[DATABASE_KEY]
    backlog = {b.role: b for b in await database.console.slack_backlog()}
    apps = []
    for name in sorted(roles):
        role = roles[name]
        if role.slack is None:
            continue
        waiting = backlog.get(name)
        cursor = await database.slack.cursor(name)
        behind, intents = (waiting.behind, waiting.intents) if waiting else (0, 0)
        apps.append(app_json(role, cursor, behind, intents))
    return web.json_response({"apps": apps})


@routes.get("/api/v1/slack/{role}/workspaces")
async def list_workspaces(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit"])
    name = request.match_info["role"]
    role = request.app[ROLES_KEY].get(name)
    if role is None:
        raise NotFound(f"no role named {name!r}", code="role_not_found")
    if role.slack is None:
        raise NotFound(f"role {name!r} has no Slack app", code="no_slack_app")
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    after = params.get("after")
    if after is not None and not 0 < len(after) <= TEAM_MAX:
        raise InvalidInput(
            f"'after' is a Slack team id (at most {TEAM_MAX} characters)",
            code="invalid_parameter",
        )
    entry = request.app[SLACK_KEY].get(name)
    client_id = entry.credentials.client_id if entry is not None else None
    page = await request.app[DATABASE_KEY].slack.workspaces(
        name, client_id=client_id, after=after, limit=limit
    )
    return web.json_response(
        {
            "role": name,
            "workspaces": [workspace_json(w) for w in page.workspaces],
            "next": page.next,
        }
    )
