"""Every route of the real application refuses a query parameter it does not take: 422
`unknown_parameter`, as docs/api.md says.

The routes are not listed here: the test walks `app.router.routes()` of the gateway as
`build_app` makes it (API, tools, MCP, widget, webhooks, health and metrics), fills each path
parameter with a plausible value, presents the credentials the route needs (the operator token,
a run token, a widget session) and adds `?bogus=1`. A route added later without reading its
query through `channels.edge.requests.read_query` (or `read_object`, which takes none) fails here.

Not walked: the Slack routes (`/slack/{role}/…`, channels/slack, answering 404 for a role
without a Slack app before they read anything); `GET /slack/{role}/oauth_redirect` legitimately
takes the parameters Slack's OAuth sends (`code`, `state`, `error`, …). Nor the operator
console's pages (`/console…`, gateway/console): HTML for a browser behind a session cookie, a
request without one sent to the login page before anything is read (the API they read from is
walked).
"""

from __future__ import annotations

from aiohttp import web

from tests.api.edge import Edge, edge_gateway  # noqa: F401  (the fixture `edge`)

PATH_VALUES = {
    "addr": "person:ann",
    "tail": "sessions",
    "source": "tracker",
    "name": "echo",
    "slug": "ann",
    "role": "echo",
    "entry_id": "x",
}


def _path(resource: web.AbstractResource) -> str:
    info = resource.get_info()
    if "path" in info:
        return str(info["path"])
    formatter = str(info["formatter"])
    for name in PATH_VALUES:
        formatter = formatter.replace("{" + name + "}", PATH_VALUES[name])
    return formatter.replace("{id}", "x").replace("{message_id}", "y")


async def test_every_route_refuses_an_unknown_query_parameter(edge: Edge) -> None:
    _, _, run_token = await edge.run_token("person:ann")
    widget = await edge.visitor()
    app = edge.server.app
    assert app is not None
    walked: list[str] = []
    skipped: list[str] = []
    for route in app.router.routes():
        resource = route.resource
        assert resource is not None
        path = _path(resource)
        console = path == "/console" or path.startswith("/console/")
        if path.startswith("/slack/") or route.method == "OPTIONS" or console:
            # Slack's routes take Slack's own parameters; a CORS preflight carries the query of
            # the request it asks about, which that request's route checks; the console's pages
            # are a browser's (see above).
            skipped.append(f"{route.method} {path}")
            continue
        assert "{" not in path, f"no value for a parameter of {path}"
        method = route.method
        if method == "*":
            method = "POST"
        if path.startswith("/api/v1/tools") or path == "/mcp":
            headers = {"Authorization": f"Bearer {run_token}"}
        elif path.startswith("/widget/v1"):
            headers = widget
        else:
            headers = {"Authorization": f"Bearer {edge.token}"}
        reply = await edge.raw(method, path + "?bogus=1", b"{}", headers=headers, token=None)
        walked.append(f"{method} {path}")
        if method == "HEAD":  # no body to read; the status says it
            assert reply.status == 422, f"{method} {path}: {reply.status}"
            continue
        message = reply.error(422, "unknown_parameter")
        assert "bogus" in message, f"{method} {path}: {message}"
    assert len(walked) >= 50, walked  # the whole app was walked, not a corner of it
    assert all(
        "/slack/" in route or route.startswith("OPTIONS ") or " /console" in route
        for route in skipped
    )
    assert "POST /hooks/tracker" in walked and "GET /widget/v1/history" in walked
