"""The OpenAPI 3.1 document of the gateway's HTTP surface, served at `GET /api/v1/openapi.json`.

    GET /api/v1/openapi.json   open (no token): the document, JSON

The document is declared beside the routes, not inferred from them: the operations in
`openapi_paths` (the operator API) and `openapi_edge` (the open routes, the agent tools, the
widget, the platforms' callbacks), the objects in `openapi_schemas`. What the code already
declares is taken from it: the agent tools' schemas (`core.engine.tools.TOOLS`), a role's schema
(its pydantic model), every enumeration (core's enums). It depends on nothing but the code, so it
is built once per process.

A declaration is kept true by tests/api/test_openapi.py, against a built application: every route
is documented and every documented operation is routed; each operation's query parameters and
body fields are exactly those its handler reads (asked of the handler itself, over HTTP); the
gateway's answers match the documented schemas, statuses and `Location` headers; and the
document passes `openapi-spec-validator`.
"""

from __future__ import annotations

import functools
import json
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from aiohttp import web

from channels.edge.requests import read_query
from gateway.api.openapi_audit import audit_paths, audit_schemas
from gateway.api.openapi_edge import OPENAPI_PATH, edge_paths
from gateway.api.openapi_paths import OPERATOR, operator_paths, shared_responses
from gateway.api.openapi_schemas import components
from gateway.api.openapi_slack import slack_paths

__all__ = ["OPENAPI_PATH", "document", "routes"]

routes = web.RouteTableDef()

_DESCRIPTION = """\
Rolecall's HTTP surface: the operator API under `/api/v1`, the agent tools, the widget's API
under `/widget/v1`, and the callbacks other platforms make. The prose reference is docs/api.md.

- **Credentials.** The operator API takes `Authorization: Bearer <operator token>`; the agent
  tools (`/api/v1/tools`, `/mcp`) a run token; the widget a session token from
  `POST /widget/v1/sessions`. `/healthz`, `/readyz`, `/metrics` and this document are open.
- **Audit.** Every operator request that changes something and succeeds is recorded, with the
  name of the operator token it carried (`GET /api/v1/audit`).
- **Requests are read strictly.** A body is one JSON object holding only the fields its
  operation names (422 `unknown_field`, `missing_field`); an optional field given as null counts
  as absent. Query parameters likewise (422 `unknown_parameter`); a route that reads a body
  takes none.
- **Errors** have one shape, `{"error": {"code", "message"}}`: `code` is stable, `message` is
  for people.
- **201 Created** always carries `Location`: the URL that reads what was created (or, for what
  is shown only once, what it belongs to).
- Every answer carries `X-Request-Id` (the request's, when it sent a well-formed one).
- `GET` operations answer `HEAD` too. CORS preflights (`OPTIONS`) under `/widget/v1` are
  answered for the origins the sites allow and are not listed.
"""

_TAGS = [
    ("overview", "the gateway at a glance: counts of threads, runs and failures"),
    ("threads", "conversations: participant sets, messages, membership, timelines"),
    ("events", "every thread's committed events, by position"),
    ("approvals", "what agents ask people before they act, answered exactly once"),
    ("roles", "the roles this gateway serves"),
    ("memory", "a role's agent memory, for operators"),
    ("runs", "a role's work in a conversation or on a task: turns, control, tokens"),
    ("tasks", "tracked work items"),
    ("people", "people and their channel identities"),
    ("endpoints", "outbound webhook endpoints"),
    ("slack", "the roles' Slack apps and the health of the workspaces they are installed in"),
    ("replicas", "the replicas serving this database"),
    ("tokens", "named, revocable operator tokens"),
    ("audit", "the audit trail of operator actions"),
    ("health", "open routes for load balancers, monitoring and tools"),
    ("agent tools", "what agents act through, behind a run token"),
    ("widget", "the chat widget's API, behind a widget session"),
    ("callbacks", "what other platforms call: signed webhooks, Slack"),
]

_BEARER = {"type": "http", "scheme": "bearer"}


def _version() -> str:
    try:
        return version("rolecall")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0.0.0"


def document() -> dict[str, Any]:
    """The document, as a new dict each call."""
    return json.loads(_encoded())  # type: ignore[no-any-return]


@functools.cache
def _encoded() -> bytes:
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "Rolecall",
            "version": _version(),
            "description": _DESCRIPTION,
        },
        "tags": [{"name": name, "description": what} for name, what in _TAGS],
        "security": OPERATOR,
        "paths": {**operator_paths(), **slack_paths(), **audit_paths(), **edge_paths()},
        "components": {
            "schemas": {**components(), **audit_schemas()},
            "responses": shared_responses(),
            "securitySchemes": {
                "operatorToken": {
                    **_BEARER,
                    "description": "a named operator token, `rco_…` (`POST /api/v1/tokens`), or "
                    "the configured one, `default` (ROLECALL_API_TOKEN or var/api-token)",
                },
                "runToken": {**_BEARER, "description": "a run token, `rct_…`"},
                "widgetSession": {**_BEARER, "description": "a widget session token"},
            },
        },
    }
    return json.dumps(doc, ensure_ascii=False).encode()


@routes.get(OPENAPI_PATH)
async def openapi(request: web.Request) -> web.Response:
    read_query(request, [])
    return web.Response(body=_encoded(), content_type="application/json")
