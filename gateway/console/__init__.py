"""The operator console at `/console`: server-rendered pages over the operator API.

    GET  /console/login                      the sign-in form (open)
    POST /console/login                      sign in with an operator token (open, rate-limited)
    POST /console/logout                     sign out (CSRF)
    GET  /console                            the overview
    GET  /console/conversations              find conversations by person or role
    GET  /console/conversations/{id}         one conversation: participants, runs, timeline
    GET  /console/conversations/{id}/stream  its new events, live (Server-Sent Events)
    GET  /console/runs                       a role's runs
    GET  /console/runs/{id}                  one run: state, session, transcript; its controls
    POST /console/runs/{id}/cancel|retry|token, GET|POST /console/runs/{id}/fresh
    GET  /console/people[?q=TEXT]            people, found by name, email or identity
    GET  /console/people/{slug}              one person: identities, conversations, changes
    GET|POST /console/people/{slug}/{action} link, link-code, merge, (de)activate, erase
    GET  /console/tasks[?status=S]           tasks, with how many conversations watch each
    GET  /console/tasks/{id}                 one task: events, its runs, subscribed conversations
    GET  /console/endpoints                  outbound endpoints: status, position, backlog
    GET  /console/endpoints/{id}             one endpoint: what parked it, its delivery log
    GET|POST /console/endpoints/{id}/replay  what replaying from a position does; replay (CSRF)
    GET  /console/slack[?role=NAME]          a role's Slack app and its workspaces' health
    GET  /console/roles                      every role: runtime, limits, how its agents fare
    GET  /console/roles/{name}               one role: its manifest as loaded, secrets by name
    GET  /console/static/{name}              the console's CSS and script (open)
    GET  /console/{anything else}            a page saying there is no such page

The theory, one module each:

- **Sessions** (`sessions`, `guard`, `login`): an operator signs in by pasting an operator token;
  the gateway checks it as the API does and answers with a session cookie (HttpOnly,
  SameSite=Strict, Path=/console) holding a random id whose digest alone is stored. The token is
  never kept, never in a URL or a cookie. Every request but the login page and the static files
  needs a live session whose token is not revoked; every change needs the session's CSRF token.
- **Data** (`api`): every figure and line a page shows is the answer of an operator API route,
  asked in process as the session's operator — the same handler, checks, JSON and audit record
  as over HTTP. The console adds no way to read or change anything; what it needs that the API
  lacked was added to the API (`gateway.api.overview`, `gateway.api.search`).
- **Pages** (`overview`, `conversations`, `timeline`, `stream`, `render`): Jinja2 templates,
  autoescaped, one layout with a skip link, landmarks and a labelled navigation; a hand-written
  stylesheet (narrow screens, dark mode by `prefers-color-scheme`) and script (the live stream
  only). Nothing comes from another host; nothing is built.

docs/console.md is the operator's guide.
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import DATABASE_KEY
from core.storage.engine import is_sqlite
from gateway.console import (
    conversations,
    endpoints,
    login,
    overview,
    people,
    people_actions,
    roles,
    runs,
    slack,
    stream,
    tasks,
)
from gateway.console.guard import CONSOLE_KEY, Console, Visit, page
from gateway.console.limits import LoginRate
from gateway.console.render import render, static
from gateway.settings import Settings

__all__ = ["add_routes"]


def add_routes(app: web.Application, settings: Settings) -> None:
    """The console's routes, and what it keeps on `app` (its login rate is shared by the
    replicas of a PostgreSQL database, so it needs the database: see `gateway.console.limits`)."""
    app[CONSOLE_KEY] = Console(
        rate=LoginRate(),
        trusted_proxies=settings.trusted_proxies,
        secure_cookie=settings.base_url.startswith("https://"),
    )
    if not is_sqlite(settings.database):
        app.on_startup.append(_shared_rate)
    app.on_shutdown.append(stream.close_streams)
    router = app.router
    router.add_get("/console/login", login.login_page)
    router.add_post("/console/login", login.sign_in)
    router.add_post("/console/logout", login.sign_out)
    router.add_get("/console", overview.overview)
    router.add_get("/console/conversations", conversations.find)
    router.add_get("/console/conversations/{id}", conversations.conversation)
    router.add_get("/console/conversations/{id}/stream", stream.follow)
    router.add_get("/console/runs", runs.runs)
    router.add_get("/console/runs/{id}", runs.run)
    router.add_post("/console/runs/{id}/cancel", runs.cancel)
    router.add_get("/console/runs/{id}/fresh", runs.fresh)
    router.add_post("/console/runs/{id}/fresh", runs.fresh)
    router.add_post("/console/runs/{id}/retry", runs.retry)
    router.add_post("/console/runs/{id}/token", runs.token)
    router.add_get("/console/people", people.people)
    router.add_get("/console/people/{slug}", people.person)
    router.add_get("/console/people/{slug}/{action}", people_actions.confirm)
    router.add_post("/console/people/{slug}/{action}", people_actions.act)
    router.add_get("/console/tasks", tasks.tasks)
    router.add_get("/console/tasks/{id}", tasks.task)
    router.add_get("/console/endpoints", endpoints.endpoints)
    router.add_get("/console/endpoints/{id}", endpoints.endpoint)
    router.add_get("/console/endpoints/{id}/replay", endpoints.replay)
    router.add_post("/console/endpoints/{id}/replay", endpoints.replay)
    router.add_get("/console/slack", slack.slack)
    router.add_get("/console/roles", roles.roles)
    router.add_get("/console/roles/{name}", roles.role)
    router.add_get("/console/static/{name}", static)
    router.add_get("/console/{tail:.*}", missing)


async def _shared_rate(app: web.Application) -> None:
    app[CONSOLE_KEY].rate = LoginRate(shared=app[DATABASE_KEY].rates)


@page
async def missing(request: web.Request, visit: Visit) -> web.StreamResponse:
    return render(
        "problem.html",
        status=404,
        title="No such page",
        sentence="The console has no page at this address; the navigation above lists its pages.",
        **visit.context(""),
    )
