"""The console's Slack page: each role's Slack app and the workspaces it is installed in, with
their health.

    GET /console/slack[?role=NAME&after=TEAM]   a role's app and its workspaces, paged

The apps are `GET /api/v1/slack` (how each is installed, the settings holding its secrets — by
name only, the API never answers a value — and how far its delivery has posted); the chosen
role's workspaces, `PAGE` at a time in team id order, are `GET /api/v1/slack/{role}/workspaces`:
each one's last event received, last post Slack accepted, latest refusal (`token_revoked`, the
method and when) and the health the API judges from them. The first app is shown when no role
is asked for; a role without an app, or an unknown one, is the API's refusal as a sentence.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.console.api import api_path
from gateway.console.guard import Visit, page
from gateway.console.render import render

PAGE = 50
HEALTH = {
    "ok": "OK",
    "failing": "Failing",
    "not_installed": "Not installed",
    "quiet": "Quiet",
}
"""How the page names each health the API answers."""
HEALTH_HELP = {
    "ok": "heard from or posted to, with no refusal since the last post",
    "failing": "Slack refused the latest call and has accepted no post since",
    "not_installed": "the app was removed from the workspace (or its tokens revoked)",
    "quiet": "nothing heard from it or posted to it yet",
}


@page
async def slack(request: web.Request, visit: Visit) -> web.StreamResponse:
    apps: list[dict[str, Any]] = (await visit.api.get(api_path("slack")))["apps"]
    role = request.query.get("role") or (apps[0]["role"] if apps else None)
    after = request.query.get("after") or None
    found: dict[str, Any] = {"workspaces": [], "next": None}
    if role is not None:
        query = {"after": after, "limit": PAGE}
        found = await visit.api.get(api_path("slack", role, "workspaces"), query)
    app = next((a for a in apps if a["role"] == role), None)
    return render(
        "slack.html",
        **visit.context("slack"),
        apps=apps,
        app=app,
        role=role,
        after=after,
        workspaces=found["workspaces"],
        next_after=found["next"],
        health=HEALTH,
        health_help=HEALTH_HELP,
    )
