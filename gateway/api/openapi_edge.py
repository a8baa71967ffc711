"""The operations outside the operator API, for the OpenAPI document (`gateway.api.openapi`): the
open routes, the agent tools (run token), the widget (`/widget/v1`, widget session), and the
callbacks other platforms make (signed webhooks, Slack, MCP clients).

The tools' operations are generated from their declarations (`core.engine.tools.TOOLS`): one
operation per tool, `POST /api/v1/tools/<name>`, whose body is the tool's input schema and whose
`result` is its output schema when it declares one — the same schemas `GET /api/v1/tools` and
`/mcp` offer.
"""

from __future__ import annotations

from typing import Any

from core.engine.tools import TOOLS, Tool
from gateway.api.openapi_paths import (
    OPEN,
    RUN_TOKEN,
    WIDGET_SESSION,
    answer,
    body,
    flag,
    made,
    operation,
    path,
    position,
    query,
)
from gateway.api.openapi_schemas import (
    ANY_OBJECT,
    STRING,
    Schema,
    described,
    obj,
    ref,
    request_body,
)

OPENAPI_PATH = "/api/v1/openapi.json"

_TOOL_FAILURES = {
    403: "`person_removed`, `person_deactivated`, `role_removed`, `role_not_configured`, "
    "`not_a_conversation`: the run may not act in its conversation now",
    404: "`tool_not_found`",
    422: "a refused argument, named in the message",
    429: "`tool_budget_spent`: the running turn has made the tool calls its role allows",
}


def _text(content_type: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {content_type: {"schema": STRING}}}


def _open_routes() -> dict[str, Any]:
    tag = "health"
    return {
        "/healthz": path(
            get=operation(
                "healthz",
                "The database answers",
                tag=tag,
                security=OPEN,
                answers={200: answer("the database answers", ref("Health"))},
                failures={503: "`database_unavailable` (with `Retry-After`), `unavailable`"},
            ),
        ),
        "/readyz": path(
            get=operation(
                "readyz",
                "This replica is registered and listening",
                tag=tag,
                security=OPEN,
                answers={200: answer("ready", ref("Ready"))},
                failures={503: "`not_ready`, with what is missing"},
            ),
        ),
        "/metrics": path(
            get=operation(
                "metrics",
                "Prometheus metrics",
                tag=tag,
                security=OPEN,
                answers={200: _text("text/plain", "the Prometheus text format")},
            ),
        ),
        OPENAPI_PATH: path(
            get=operation(
                "openapi",
                "This document",
                tag=tag,
                security=OPEN,
                answers={200: answer("the OpenAPI 3.1 document", ANY_OBJECT)},
            ),
        ),
    }


def _tool_result(tool: Tool | None) -> Schema:
    result: Schema = dict(tool.output_schema) if tool and tool.output_schema else {}
    if tool is not None:
        result.setdefault("description", tool.result)
    return obj({"result": result})


def _tools() -> dict[str, Any]:
    tag = "agent tools"
    paths: dict[str, Any] = {
        "/api/v1/tools": path(
            get=operation(
                "list_tools",
                "The agent tools and their JSON schemas",
                tag=tag,
                security=RUN_TOKEN,
                answers={200: answer("the tools", ref("ToolList"))},
                failures={403: _TOOL_FAILURES[403]},
            ),
        ),
        "/api/v1/tools/{name}": path(
            {"name": "the tool's name"},
            post=operation(
                "call_tool",
                "Call an agent tool as the run the token names",
                tag=tag,
                security=RUN_TOKEN,
                description="The arguments as a JSON object (no body: no arguments); each "
                "tool's own operation below gives its schema.",
                request=body(ANY_OBJECT, required=False),
                answers={200: answer("what the tool answers", _tool_result(None))},
                failures=_TOOL_FAILURES,
            ),
        ),
    }
    for tool in TOOLS.values():
        paths[f"/api/v1/tools/{tool.name}"] = path(
            post=operation(
                f"tool_{tool.name}",
                tool.description.split("\n", 1)[0],
                tag=tag,
                security=RUN_TOKEN,
                description=tool.description,
                request=body(dict(tool.input_schema), required=False),
                answers={200: answer(tool.result, _tool_result(tool))},
                failures={k: v for k, v in _TOOL_FAILURES.items() if k != 404},
            ),
        )
    return paths


_ORIGIN = "`origin_not_allowed`: the page's `Origin` is not one the site allows"


def _widget_operation(operation_id: str, summary: str, **kwargs: Any) -> dict[str, Any]:
    failures = {403: _ORIGIN, **kwargs.pop("failures", {})}
    kwargs.setdefault("security", WIDGET_SESSION)
    return operation(operation_id, summary, tag="widget", failures=failures, **kwargs)


def _widget() -> dict[str, Any]:
    prefix = "/widget/v1"
    rate = "`rate_limited`, with `Retry-After`"
    deactivated = "`person_deactivated`"
    return {
        "/": path(
            get=operation(
                "demo_page",
                "The demo page, with the widget on it",
                tag="widget",
                security=OPEN,
                answers={200: _text("text/html", "the page")},
            ),
        ),
        "/widget.js": path(
            get=operation(
                "widget_script",
                "The widget's script, for any page to embed",
                tag="widget",
                security=OPEN,
                description="gzip-compressed when the request accepts it. With `v` the running "
                "script's version (the banner's and the demo page's URL), cached for a year "
                "(`immutable`); otherwise revalidated with its `ETag` (`no-cache`).",
                parameters=[query("v", STRING, "the script's version, a hash of its content")],
                answers={
                    200: _text("application/javascript", "the script"),
                    304: {"description": "the browser's copy (`If-None-Match`) is current"},
                },
            ),
        ),
        f"{prefix}/sessions": path(
            post=_widget_operation(
                "widget_start_session",
                "Start a widget session: a signed user, or an anonymous visitor",
                security=OPEN,
                request=body(
                    request_body(
                        {"role": STRING},
                        {
                            "site": described(STRING, "default `default`"),
                            "user_token": described(STRING, "the host site's signed user"),
                            "visitor_token": described(STRING, "a returning visitor's"),
                        },
                    )
                ),
                answers={200: answer("the session", ref("WidgetSession"))},
                failures={
                    401: "`invalid_user_token`, `invalid_visitor_token`",
                    404: "`unknown_role`, `unknown_site`",
                    429: rate,
                },
            ),
        ),
        f"{prefix}/history": path(
            get=_widget_operation(
                "widget_history",
                "A page of the conversation, newest first",
                parameters=[
                    position("before", "the page before this `seq`", low=1),
                    query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": 100, "default": 30},
                        "at most this many",
                    ),
                    flag("archived", "also what came before the latest start fresh"),
                    query("conversation", STRING, "an earlier conversation (`predecessor`)"),
                ],
                answers={200: answer("the page, oldest first", ref("WidgetHistory"))},
                failures={404: "`unknown_conversation`"},
            ),
        ),
        f"{prefix}/messages": path(
            post=_widget_operation(
                "widget_post_message",
                "The person says something",
                request=body(request_body({"text": STRING})),
                answers={
                    201: made(
                        "the message as the widget shows it",
                        ref("WidgetPosted"),
                        "the history page holding this message alone",
                    )
                },
                failures={403: f"{_ORIGIN}; {deactivated}", 413: "`too_large`", 429: rate},
            ),
        ),
        f"{prefix}/approvals/{{id}}": path(
            {"id": "the approval's id"},
            post=_widget_operation(
                "widget_answer_approval",
                "The person answers an approval of their conversation",
                description="The first valid answer from any channel resolves it; a later one "
                "is refused, saying how it was resolved. An approval of another conversation, "
                "or one the person does not see, is not found.",
                request=body(request_body({"option": described(STRING, "the option's id")})),
                answers={
                    200: answer("the resolution as the widget shows it", ref("WidgetAnswered"))
                },
                failures={
                    403: f"{_ORIGIN}; `not_an_approver`, `participant_removed`",
                    404: "`approval_not_found`",
                    409: "`approval_closed`: answered, expired or cancelled already",
                    422: "`unknown_option`",
                    429: rate,
                },
            ),
        ),
        f"{prefix}/stream": path(
            get=_widget_operation(
                "widget_stream",
                "The conversation, live (Server-Sent Events)",
                description="`event: timeline` frames (id: the `seq`, data: a widget event), "
                "`event: working` frames (`{role, working}`), after `event: ready`.",
                parameters=[
                    query("token", STRING, "the session token, for `EventSource`"),
                    query(
                        "after",
                        {"type": "integer", "minimum": 0},
                        "the `seq` the page has (a first connection)",
                    ),
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "description": "the browser's reconnect: the last `seq` it got",
                        "schema": STRING,
                    },
                ],
                answers={200: _text("text/event-stream", "the stream")},
            ),
        ),
        f"{prefix}/fresh": path(
            post=_widget_operation(
                "widget_start_fresh",
                "Start fresh: what came before is archived",
                request=body(request_body(), required=False),
                answers={200: answer("where the archive ends", ref("WidgetFresh"))},
            ),
        ),
        f"{prefix}/link-codes": path(
            post=_widget_operation(
                "widget_new_link_code",
                "A link code for this person, to give in another channel",
                request=body(request_body(), required=False),
                answers={
                    201: made(
                        "the code, shown once",
                        ref("WidgetLinkCode"),
                        "the conversation of the person the code links to",
                    )
                },
            ),
        ),
        f"{prefix}/link": path(
            post=_widget_operation(
                "widget_redeem_link_code",
                "Redeem a link code with this browser's identity: a new session",
                request=body(request_body({"code": STRING})),
                answers={200: answer("the new session", ref("WidgetSession"))},
                failures={
                    404: "`link_code_unknown`, `link_code_used`, `link_code_expired`",
                    409: "`person_deactivated`, `identity_taken`",
                    422: "`invalid_link_code`",
                    429: rate,
                },
            ),
        ),
    }


def _json_rpc(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ANY_OBJECT}}}


def _callbacks() -> dict[str, Any]:
    tag = "callbacks"
    anything = {"content": {"application/json": {"schema": {}}}, "required": True}
    slack_body = {
        "required": True,
        "content": {
            "application/json": {"schema": ANY_OBJECT},
            "application/x-www-form-urlencoded": {"schema": ANY_OBJECT},
        },
    }
    role = {"role": "a role with a Slack app"}
    html = _text("text/html", "a page for the installer")
    return {
        "/hooks/{source}": path(
            {"source": "a webhook source's name (`manifests/sources/`)"},
            post=operation(
                "receive_webhook",
                "An inbound webhook delivery from another system",
                tag=tag,
                security=OPEN,
                description="Signed with the source's secret, in the source's kind's headers "
                "(Standard Webhooks, GitHub, or a plain HMAC; docs/webhooks.md). The body is "
                "the other system's payload, as it sends it.",
                request=anything,
                answers={200: answer("committed, with what was done", ref("HookDelivery"))},
                failures={
                    400: "`missing_header`, `invalid_json`",
                    401: "`invalid_signature`",
                    404: "`source_not_found`",
                    422: "a payload that does not map, with the reason",
                },
            ),
        ),
        "/slack/{role}/events": path(
            role,
            post=operation(
                "slack_events",
                "Slack's Events API, for one role's Slack app",
                tag=tag,
                security=OPEN,
                description="Slack calls this; it is signed with the app's signing secret "
                "(docs/slack.md).",
                request=slack_body,
                answers={200: {"description": "acknowledged (bolt's answer)"}},
                failures={
                    401: "`invalid_signature`",
                    404: "`unknown_role`, `socket_mode`, `unhandled_event`",
                    422: "`invalid_slack_event`",
                    503: "`event_not_recorded`: Slack sends it again",
                },
            ),
        ),
        "/slack/{role}/interactivity": path(
            role,
            post=operation(
                "slack_interactivity",
                "Clicks on the buttons of the role's Slack messages (approvals)",
                tag=tag,
                security=OPEN,
                description="Slack calls this with a form whose one field, `payload`, is a "
                "`block_actions` interaction; it is signed with the app's signing secret like "
                "events. A click on an approval's button answers it before the 200 "
                "(docs/approvals.md).",
                request=slack_body,
                answers={200: {"description": "acknowledged (bolt's answer)"}},
                failures={
                    400: "`invalid_body`, `invalid_json`",
                    401: "`invalid_signature`",
                    404: "`unknown_role`, `socket_mode`, `unhandled_event`",
                    422: "`invalid_slack_interaction`, `invalid_slack_event`",
                    503: "`event_not_recorded`: Slack sends it again",
                },
            ),
        ),
        "/slack/{role}/install": path(
            role,
            get=operation(
                "slack_install",
                "Install the role's Slack app in a workspace: on to Slack",
                tag=tag,
                security=OPEN,
                answers={200: html, 302: {"description": "on to Slack's authorize page"}},
                failures={404: "`unknown_role`, `not_installed_over_oauth`"},
            ),
        ),
        "/slack/{role}/oauth_redirect": path(
            role,
            get=operation(
                "slack_oauth_redirect",
                "Slack sends the installer back here",
                tag=tag,
                security=OPEN,
                description="Slack calls this with the parameters of its OAuth flow.",
                parameters=[
                    query("code", STRING, "Slack's"),
                    query("state", STRING, "Slack's"),
                    query("error", STRING, "Slack's"),
                ],
                answers={200: html},
                failures={404: "`unknown_role`, `not_installed_over_oauth`"},
            ),
        ),
        "/mcp": path(
            post=operation(
                "mcp",
                "The agent tools over MCP (streamable HTTP, stateless, JSON answers)",
                tag="agent tools",
                security=RUN_TOKEN,
                description="A JSON-RPC message of the Model Context Protocol "
                "(https://modelcontextprotocol.io); the same tools as `/api/v1/tools`. "
                "`GET` and `DELETE` answer 405: this stateless server opens no stream.",
                request={"required": True, "content": {"application/json": {"schema": {}}}},
                answers={
                    200: _json_rpc("the JSON-RPC answer"),
                    202: {"description": "a notification, accepted"},
                    400: _json_rpc("a JSON-RPC error: not JSON (`-32700`), a wrong Content-Type"),
                    405: _json_rpc("a JSON-RPC error: `GET` or `DELETE`"),
                    406: _json_rpc("a JSON-RPC error: an `Accept` without `application/json`"),
                },
                failures={403: _TOOL_FAILURES[403]},
            ),
        ),
    }


def edge_paths() -> dict[str, Any]:
    return {**_open_routes(), **_tools(), **_widget(), **_callbacks()}
