"""The OpenAPI document, `GET /api/v1/openapi.json`, holds to the gateway it describes.

- It is served without a token, is what `gateway.api.openapi.document()` builds, and is a valid
  OpenAPI 3.1 document (`openapi-spec-validator`).
- Routes and operations are the same set: the test walks `app.router` of a built application;
  a route missing from the document fails, and so does an operation nothing routes.
- Each operation reads what it documents, asked of the handler itself over HTTP: `?bogus=1`
  makes `read_query` name the parameters it takes; a body `{"bogus": 1}` makes `read_object`
  name its fields; `{}`, filled in field by field, names the required ones; no body at all says
  whether one is needed. The document must say exactly the same.
- The gateway's answers are the documented ones: one scenario calls every documented operation
  and checks each answer — status, schema (closed: an undocumented field fails), `Location` on
  201 — against the document, and each body it sent that was taken against the documented
  request body (`tests.api.openapi_doc`).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from openapi_spec_validator import validate

from channels.edge.requests import DATABASE_KEY
from core.engine.tools import TOOLS
from core.model.approvals import YES_NO, ApprovalRequest, ToolCallAsked
from core.model.participants import Address
from core.model.timeline import ThreadId
from gateway.app import build_app
from tests.api.conftest import ECHO, SLOW, TOKEN, Reply
from tests.api.edge import Edge, dumps, edge_settings
from tests.api.openapi_doc import Document
from tests.api.test_hostile_input import MCP_HEADERS
from tests.serving import serve
from tests.waiting import eventually
from tests.webhooks.conftest import SECRETS, encode, new_id, standard_headers

ABSENT = "0" * 31 + "1"  # an id's shape that names nothing
PATH_VALUES = {
    "id": ABSENT,
    "message_id": ABSENT,
    "entry_id": ABSENT,
    "addr": "person:ann",
    "name": "echo",
    "role": "echo",
    "slug": "ann",
    "source": "tracker",
}
UNDOCUMENTED = {
    # A CORS preflight carries the request it asks about; it is answered for the origins the
    # sites allow (docs/widget.md), not an operation of its own.
    ("OPTIONS", "/widget/v1/{tail}"),
}
CONSOLE = "/console"
"""The operator console's routes are pages for a browser behind a session cookie
(docs/console.md), not operations of the API: everything they show is read from it."""
PLATFORM_BODIES = {
    # Bodies the other platform writes, not fields a handler reads: the webhook's payload, a
    # tool's arguments by name (each tool's own operation is checked), JSON-RPC, Slack's events.
    "POST /hooks/{source}",
    "POST /api/v1/tools/{name}",
    "POST /mcp",
    "POST /slack/{role}/events",
    "POST /slack/{role}/interactivity",
}


@pytest.fixture
async def edge(tmp_path: Path, sqlite_url: str) -> AsyncIterator[Edge]:
    """The gateway at its edge on SQLite: roles echo and slow, the widget's default site, the
    webhook sources of tests/webhooks, endpoints allowed on loopback."""
    settings = edge_settings(tmp_path, sqlite_url, endpoints_allow_private=True)
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO, "slow": SLOW}, secrets=SECRETS)
    async with serve(app, port=settings.port) as server, aiohttp.ClientSession() as session:
        yield Edge(server, session)


@pytest.fixture(scope="module")
def doc() -> Document:
    return Document()


def _concrete(template: str) -> str:
    return re.sub(r"\{([^}]+)\}", lambda m: PATH_VALUES[m.group(1)], template)


# --- the document itself ------------------------------------------------------------------------


async def test_the_document_is_served_without_a_token_and_is_valid_openapi_3_1(
    edge: Edge, doc: Document
) -> None:
    """Anyone may read it (no operator token); it is the document the code builds, and
    `openapi-spec-validator` finds it a valid OpenAPI 3.1 document."""
    reply = await edge.get("/api/v1/openapi.json", token=None)
    assert reply.status == 200, reply.text
    assert reply.headers["Content-Type"].startswith("application/json")
    assert reply.body == doc.raw
    assert reply.body["openapi"].startswith("3.1.")
    validate(reply.body)
    head = await edge.call("HEAD", "/api/v1/openapi.json", token=None)
    assert head.status == 200
    bogus = await edge.get("/api/v1/openapi.json?x=1", token=None)
    bogus.error(422, "unknown_parameter")
    assert (await edge.get("/api/v1/openapi.jsonx", token=None)).status == 401


async def test_every_route_is_documented_and_every_operation_is_routed(
    edge: Edge, doc: Document
) -> None:
    """The routes of the built application and the document's operations are one set (GET
    routes answer HEAD too; the widget's CORS preflight is the one route not listed). A
    concrete documented path (a tool's) is routed when a route matches it."""
    app = edge.server.app
    assert app is not None
    routed: set[tuple[str, str]] = set()
    for route in app.router.routes():
        assert route.resource is not None
        routed.add((route.method, route.resource.canonical))
    gets = {path for method, path in routed if method == "GET"}
    assert {path for method, path in routed if method == "HEAD"} <= gets
    documented = {(method, path) for method, path, _ in doc.operations()}
    for method, path in sorted(routed - UNDOCUMENTED):
        if method == "HEAD" or path == CONSOLE or path.startswith(CONSOLE + "/"):
            continue
        if method == "*":  # any method: documented by at least one operation
            assert any(p == path for _, p in documented), f"{path} is not documented"
            continue
        assert (method, path) in documented, f"{method} {path} is routed but not documented"
    for method, path in sorted(documented):
        if (method, path) in routed or ("*", path) in routed:
            continue
        matched = [
            route
            for route in app.router.routes()
            if route.method in (method, "*") and _matches(route.resource, path)
        ]
        assert matched, f"{method} {path} is documented but nothing routes it"
    assert len(documented) >= 60, len(documented)


def _matches(resource: web.AbstractResource | None, path: str) -> bool:
    assert resource is not None
    info = resource.get_info()
    if "path" in info:
        return bool(info["path"] == path)
    pattern = info.get("pattern")
    return pattern is not None and pattern.fullmatch(path) is not None


def test_the_agent_tools_are_documented_with_their_own_schemas(doc: Document) -> None:
    """Each tool has its operation, whose body is the tool's input schema and whose result is
    its output schema — the schemas `GET /api/v1/tools` and `/mcp` offer."""
    for tool in TOOLS.values():
        _, op = doc.operation("POST", f"/api/v1/tools/{tool.name}")
        assert op["requestBody"]["content"]["application/json"]["schema"] == tool.input_schema
        result = op["responses"]["200"]["content"]["application/json"]["schema"]
        if tool.output_schema is not None:
            assert {**result["properties"]["result"], "description": None} == {
                **tool.output_schema,
                "description": None,
            }


# --- what each operation reads ------------------------------------------------------------------


def _named(message: str) -> set[str]:
    """The names after 'this request takes' in a refusal of `channels.edge.requests`."""
    found = re.search(r"this request takes (.*)$", message)
    assert found is not None, message
    if found.group(1).startswith("no "):
        return set()
    return set(re.findall(r"'([^']*)'", found.group(1)))


class Prober:
    """Requests to one operation with the credentials it takes."""

    def __init__(self, edge: Edge, run_token: str, widget: dict[str, str]) -> None:
        self.edge = edge
        self.run_token = run_token
        self.widget = widget

    def headers(self, op: dict[str, Any], path: str) -> dict[str, str]:
        schemes = {
            name for scheme in op.get("security", [{"operatorToken": []}]) for name in scheme
        }
        headers = {**MCP_HEADERS} if path == "/mcp" else {}
        if "runToken" in schemes:
            headers["Authorization"] = f"Bearer {self.run_token}"
        elif "widgetSession" in schemes:
            headers.update(self.widget)
        elif "operatorToken" in schemes:
            headers["Authorization"] = f"Bearer {TOKEN}"
        return headers

    async def send(
        self, method: str, path: str, op: dict[str, Any], body: bytes | None, query: str = ""
    ) -> Reply:
        return await self.edge.raw(
            method, path + query, body, headers=self.headers(op, path), token=None
        )


async def test_each_operation_documents_exactly_the_parameters_and_fields_its_handler_reads(
    edge: Edge, doc: Document
) -> None:
    """For every operation (but Slack's, which read what Slack sends): the query parameters
    its handler takes, the fields of its body, which of them are required, and whether a body
    is needed at all, as the handler says over HTTP, are the document's."""
    _, _, run_token = await edge.run_token("person:ann")
    prober = Prober(edge, run_token, await edge.visitor())
    checked = []
    for method, template, op in doc.operations():
        key = f"{method} {template}"
        if template.startswith("/slack/"):
            continue
        path = _concrete(template)
        item = doc.raw["paths"][template]
        params = [*item.get("parameters", []), *op.get("parameters", [])]
        documented = {p["name"] for p in params if p["in"] == "query"}
        reply = await prober.send(method, path, op, b"{}", "?bogus=1")
        taken = _named(reply.error(422, "unknown_parameter"))
        assert taken == documented, f"{key}: the handler takes the query parameters {taken}"
        for param in params:
            if param["in"] == "query" and param.get("required"):
                missing = await prober.send(method, path, op, None)
                assert param["name"] in missing.error(422, "missing_parameter"), key
        request = op.get("requestBody")
        if method in ("GET", "DELETE"):
            assert request is None, f"{key} documents a body"
        if request is not None and key not in PLATFORM_BODIES:
            await _check_body(prober, method, path, op, request, key)
        checked.append(key)
    assert len(checked) >= 55, checked


async def _check_body(
    prober: Prober, method: str, path: str, op: dict[str, Any], request: dict[str, Any], key: str
) -> None:
    schema = request["content"]["application/json"]["schema"]
    assert "properties" in schema, f"{key}: a body without its fields"
    reply = await prober.send(method, path, op, dumps({"bogus": 1}))
    fields = _named(reply.error(422, "unknown_field"))
    assert fields == set(schema["properties"]), f"{key}: the handler reads the fields {fields}"
    required: list[str] = []
    while True:
        reply = await prober.send(method, path, op, dumps(dict.fromkeys(required)))
        if reply.status != 422 or reply.body["error"]["code"] != "missing_field":
            break
        found = re.search(r"missing required field '([^']*)'", reply.body["error"]["message"])
        assert found is not None and found.group(1) not in required, reply.text
        required.append(found.group(1))
    assert set(required) == set(schema.get("required", [])), f"{key}: required are {required}"
    bare = await prober.send(method, path, op, None)
    needs_body = bare.status == 400 and bare.body["error"]["code"] == "invalid_json"
    assert needs_body == request["required"], f"{key}: a body is needed: {needs_body}"


# --- what each operation answers ----------------------------------------------------------------

TOOL_CALLS: dict[str, Any] = {
    "peek_pending": {},
    "store": {"payload": {"kind": "note", "text": "desk 4B"}},
    "recall": {"query": "desk"},
    "send_message": {"text": "a note from the role"},
    "ask": {"question": "Shall I?", "expires_in": 1},
    "task_create": {"title": "Printer", "assignee": "echo"},
    "task_list": {},
    "subscribe": {"external_key": "tracker:INC-9"},
    "unsubscribe": {"external_key": "tracker:INC-9"},
}


class Scenario:
    """Calls through the edge, each answer checked against the document."""

    def __init__(self, edge: Edge, doc: Document) -> None:
        self.edge = edge
        self.doc = doc
        self.exercised: set[str] = set()

    async def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        status: int,
        headers: dict[str, str] | None = None,
        token: str | None = TOKEN,
        raw: bytes | None = None,
    ) -> Any:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = {"Content-Type": "application/json", **(headers or {})}
        reply = await self.edge.call(method, path, data=data, token=token, headers=sent)
        assert reply.status == status, f"{method} {path}: {reply.status} {reply.text[:500]}"
        if body is not None and reply.status < 400:
            self.doc.check_request(method, path, body)
        self.exercised.add(self.doc.check(method, path, reply))
        return (
            reply.body
            if reply.headers.get("Content-Type", "").startswith("application/json")
            else reply.text
        )


async def test_every_operation_answers_as_documented(edge: Edge, doc: Document) -> None:
    """One scenario through every documented operation; each answer's status, body and
    headers are the document's (an undocumented field of an answer fails)."""
    assert set(TOOL_CALLS) | {"retract", "task_get", "task_comment", "task_update"} == set(TOOLS), (
        "a tool without a call in this scenario"
    )
    call = Scenario(edge, doc)
    await _open_routes(call)
    ids = await _operator_api(call, edge)
    await _agent_tools(call, ids)
    await _widget(call, edge)
    await _callbacks(call, ids)
    every = {f"{method} {path}" for method, path, _ in doc.operations()}
    assert every - call.exercised == set(), "operations the scenario does not exercise"


async def _open_routes(call: Scenario) -> None:
    await call("GET", "/healthz", status=200, token=None)
    await call("GET", "/readyz", status=200, token=None)
    await call("GET", "/metrics", status=200, token=None)
    await call("GET", "/api/v1/openapi.json", status=200, token=None)
    await call("GET", "/api/v1/roles", status=200)
    await call("GET", "/api/v1/roles/echo", status=200)
    await call("GET", "/api/v1/roles/nobody", status=404)
    await call("GET", "/api/v1/slack", status=200)
    await call("GET", "/api/v1/slack/echo/workspaces", status=404)  # no Slack app here
    await call("GET", "/api/v1/replicas", status=200)
    await call("GET", "/api/v1/overview", status=200)
    await call("GET", "/api/v1/threads", status=401, token=None)


async def _operator_api(call: Scenario, edge: Edge) -> dict[str, str]:
    thread = (await call("POST", "/api/v1/threads", {"participants": ["person:ann", "role:echo"]},
                         status=201))["id"]  # fmt: skip
    await call("POST", "/api/v1/threads", {"participants": ["role:echo", "person:ann"]}, status=200)
    await call("GET", "/api/v1/threads?participant=person:ann", status=200)
    await call("GET", f"/api/v1/threads/{thread}", status=200)
    await call("PATCH", f"/api/v1/threads/{thread}", {"memory_policy": {"thread_only": False}},
               status=200)  # fmt: skip
    message = await call("POST", f"/api/v1/threads/{thread}/messages",
                         {"author": "person:ann", "text": "hello", "context": {"kind": "hi"}},
                         status=201)  # fmt: skip
    await call("POST", f"/api/v1/threads/{thread}/messages/{message['id']}/retract",
               {"author": "person:ann", "reason": "typo"}, status=201)  # fmt: skip
    last = await call("POST", f"/api/v1/threads/{thread}/messages",
                      {"author": "person:ann", "text": "hi"}, status=201)  # fmt: skip
    run = await eventually(lambda: _run_of(edge, thread), what="the run of ann's conversation")
    await eventually(lambda: _settled(edge, run, last["seq"]), what="echo done answering ann")
    await call("GET", f"/api/v1/threads/{thread}/timeline?as=person:ann&latest=true", status=200)
    await call("GET", f"/api/v1/threads/{thread}/channels?first=1&last=10", status=200)
    await call("GET", "/api/v1/search/messages?q=hello&limit=2", status=200)
    await call("GET", "/api/v1/events?after=0", status=200)
    await call("GET", f"/api/v1/runs?thread={thread}", status=200)
    await call("GET", "/api/v1/runs?role=echo", status=200)
    # The console's Runs page: a role's runs of one status.
    await call("GET", "/api/v1/runs?role=echo&status=ready", status=200)
    await call("GET", f"/api/v1/runs/{run}", status=200)
    await call("GET", f"/api/v1/runs/{run}/turns", status=200)
    token = (await call("POST", f"/api/v1/runs/{run}/token", status=201))["token"]
    await call("POST", f"/api/v1/runs/{run}/subscriptions", {"external_key": "tracker:INC-1"},
               status=201)  # fmt: skip
    await call("POST", f"/api/v1/runs/{run}/subscriptions", {"external_key": "tracker:INC-1"},
               status=200)  # fmt: skip
    await call("GET", f"/api/v1/runs/{run}/subscriptions", status=200)
    await call("POST", f"/api/v1/runs/{run}/cancel", status=409)
    await call("POST", f"/api/v1/runs/{run}/retry", status=409)  # its last turn did not fail
    await _cancel_a_running_turn(call, edge)
    await call("POST", f"/api/v1/runs/{run}/sessions", status=201)
    await call("POST", f"/api/v1/threads/{thread}/participants/person:ann", {"state": "removed"},
               status=200)  # fmt: skip
    await call("POST", f"/api/v1/threads/{thread}/participants/person:ann", {"state": "active"},
               status=200)  # fmt: skip
    task = await _tasks(call)
    await _approvals(call, edge, run)
    await _people(call)
    await _endpoints(call)
    await _tokens_and_audit(call)
    return {"thread": thread, "run": run, "token": token, "task": task}


async def _run_of(edge: Edge, thread: str) -> str | None:
    runs = (await edge.get(f"/api/v1/runs?thread={thread}")).body["runs"]
    return str(runs[0]["id"]) if runs else None


async def _settled(edge: Edge, run: str, seq: int) -> bool:
    """The run has looked past `seq` and runs no turn: nothing wakes it until the next
    message."""
    shown = (await edge.get(f"/api/v1/runs/{run}")).body
    return bool(shown["cursor"] >= seq and not shown["running"] and shown["turns"])


async def _cancel_a_running_turn(call: Scenario, edge: Edge) -> None:
    thread = (await edge.thread("person:cat", "role:slow"))["id"]
    await edge.say(thread, "person:cat", "take your time")

    async def running() -> str | None:
        runs = (await edge.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return runs[0]["id"] if runs and runs[0]["running"] else None

    run = await eventually(running, what="slow's turn running")
    await call("POST", f"/api/v1/runs/{run}/cancel", raw=b"", status=200)


async def _tasks(call: Scenario) -> str:
    made = await call("POST", "/api/v1/tasks", {"author": "person:ann", "title": "Printer",
                                                "external": {"source": "tracker", "key": "INC-7"}},
                      status=201)  # fmt: skip
    task = made["id"]
    await call("GET", "/api/v1/tasks?status=open", status=200)
    await call("PATCH", f"/api/v1/tasks/{task}", {"author": "person:ann", "status": "in_progress",
                                                  "assignee": "echo"}, status=200)  # fmt: skip
    await call("PATCH", f"/api/v1/tasks/{task}", {"author": "person:ann", "assignee": "echo"},
               status=200)  # fmt: skip
    await call("POST", f"/api/v1/tasks/{task}/comments", {"author": "person:ann", "text": "ok"},
               status=201)  # fmt: skip
    await call("GET", f"/api/v1/tasks/{task}", status=200)
    await call("GET", f"/api/v1/tasks/{ABSENT}", status=404)
    # The console's Tasks page: a task's events and its subscribers, a page at a time.
    await call("GET", f"/api/v1/tasks/{task}/events?after=1&limit=1", status=200)
    await call("GET", f"/api/v1/tasks/{task}/subscribers", status=200)
    await call("GET", f"/api/v1/tasks/{ABSENT}/subscribers", status=404)
    return str(task)


async def _approvals(call: Scenario, edge: Edge, run: str) -> None:
    """An approval asked as a run asks it (storage: no operator route asks), then answered."""
    thread = (await edge.thread("person:ann", "role:ops"))["id"]
    assert edge.server.app is not None
    asked = await edge.server.app[DATABASE_KEY].approvals.request(
        ThreadId(thread), run, Address("role:ops"), ApprovalRequest(
            title="Restart web?", description=None, options=YES_NO,
            tool=ToolCallAsked(name="execute", arguments={"command": "restart web"}),
            approvers=(), expires_at=datetime.now(UTC) + timedelta(minutes=5)))  # fmt: skip
    await call("GET", f"/api/v1/threads/{thread}/approvals?as=person:ann", status=200)
    await call("GET", f"/api/v1/approvals/{asked.id}", status=200)
    await call("GET", f"/api/v1/approvals/{ABSENT}", status=404)
    answer = {"option": "yes", "as": "person:ann", "channel": "web"}
    await call("POST", f"/api/v1/approvals/{asked.id}", answer, status=200)
    await call("POST", f"/api/v1/approvals/{asked.id}", answer, status=409)
    await call("GET", f"/api/v1/threads/{thread}/approvals?state=all", status=200)
    await call("GET", f"/api/v1/threads/{thread}/timeline", status=200)


async def _people(call: Scenario) -> None:
    await call("POST", "/api/v1/persons", {"display_name": "Bea Lee", "email": "bea@example.com"},
               status=201)  # fmt: skip
    await call("GET", "/api/v1/persons?limit=1", status=200)
    await call("GET", "/api/v1/persons/bea-lee", status=200)
    await call("PATCH", "/api/v1/persons/bea-lee", {"display_name": "Bea"}, status=200)
    await call("POST", "/api/v1/persons/bea-lee/identities", {"identity": "web:default:bea"},
               status=201)  # fmt: skip
    await call("POST", "/api/v1/persons/bea-lee/identities", {"identity": "web:default:bea"},
               status=200)  # fmt: skip
    code = await call("POST", "/api/v1/persons/bea-lee/link-codes", status=201)
    await call("POST", "/api/v1/link-codes/redeem",
               {"code": code["code"], "identity": "slack:t1:u1"}, status=200)  # fmt: skip
    await call("GET", "/api/v1/search/persons?q=slack:t1:u1&limit=1", status=200)
    await call("POST", "/api/v1/threads", {"participants": ["person:bea-lee", "role:echo"]},
               status=201)  # fmt: skip
    await call("GET", "/api/v1/persons/bea-lee/erasure", status=200)
    await call("DELETE", "/api/v1/persons/bea-lee", status=422)  # not confirmed: nothing goes
    await call("DELETE", "/api/v1/persons/bea-lee?erase=true", status=200)
    await call("PATCH", "/api/v1/persons/bea-lee", {"active": True}, status=410)
    await call("POST", "/api/v1/threads", {"participants": ["person:bea-lee", "role:echo"]},
               status=410)  # fmt: skip


async def _endpoints(call: Scenario) -> None:
    async def receive(request: web.Request) -> web.Response:
        return web.Response()

    async with serve(receive) as receiver:
        url = str(receiver.make_url("/hook"))
        made = await call("POST", "/api/v1/endpoints", {"url": url, "kinds": ["message"]},
                          status=201)  # fmt: skip
        endpoint = made["id"]
        await call("GET", "/api/v1/endpoints", status=200)
        await call("GET", f"/api/v1/endpoints/{endpoint}", status=200)
        await call("POST", f"/api/v1/endpoints/{endpoint}/replay", {"from_position": 1},
                   status=200)  # fmt: skip
        # The console's Endpoints page: an endpoint's delivery log.
        await eventually(lambda: _delivered(call, endpoint), what="a delivery to the endpoint")
        await call("GET", f"/api/v1/endpoints/{endpoint}/deliveries?limit=1", status=200)
        await call("GET", f"/api/v1/endpoints/{ABSENT}/deliveries", status=404)
        await call("DELETE", f"/api/v1/endpoints/{endpoint}", status=200)


async def _delivered(call: Scenario, endpoint: str) -> bool:
    shown = await call.edge.get(f"/api/v1/endpoints/{endpoint}/deliveries")
    return bool(shown.body["deliveries"])


async def _tokens_and_audit(call: Scenario) -> None:
    made = await call("POST", "/api/v1/tokens", {"name": "ci"}, status=201)
    await call("POST", "/api/v1/tokens", {"name": "ci"}, status=409)
    await call("GET", "/api/v1/tokens", status=200, token=made["token"])
    await call("GET", "/api/v1/tokens/ci", status=200)
    await call("GET", "/api/v1/tokens/nobody", status=404)
    await call("DELETE", "/api/v1/tokens/ci", status=200)
    await call("GET", "/api/v1/tokens", status=401, token=made["token"])
    await call("GET", "/api/v1/audit?latest=true&limit=5", status=200)
    await call("GET", "/api/v1/audit?actor=ci&action=token.create", status=200)


async def _agent_tools(call: Scenario, ids: dict[str, str]) -> None:
    token = ids["token"]
    await call("GET", "/api/v1/tools", status=200, token=token)
    await call("POST", "/api/v1/tools/nope", {}, status=404, token=token)
    results: dict[str, Any] = {}
    for name, arguments in TOOL_CALLS.items():
        answer = await call("POST", f"/api/v1/tools/{name}", arguments, status=200, token=token)
        results[name] = answer["result"]
    task = results["task_create"]["id"]
    await call("POST", "/api/v1/tools/task_get", {"task_id": task}, status=200, token=token)
    await call("POST", "/api/v1/tools/task_comment", {"task_id": task, "text": "on it"},
               status=200, token=token)  # fmt: skip
    await call("POST", "/api/v1/tools/task_update", {"task_id": task, "status": "done"},
               status=200, token=token)  # fmt: skip
    await call("POST", "/api/v1/tools/retract", {"message_id": results["send_message"]["id"]},
               status=200, token=token)  # fmt: skip
    entries = await call("GET", "/api/v1/roles/echo/memory", status=200)
    entry = entries["entries"][0]["id"]
    await call("POST", f"/api/v1/roles/echo/memory/{entry}/redact", {"reason": "wrong"},
               status=201)  # fmt: skip
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    await call("POST", "/mcp", initialize, status=200, token=token, headers=MCP_HEADERS)


async def _widget(call: Scenario, edge: Edge) -> None:
    await call("GET", "/", status=200, token=None)
    await call("GET", "/widget.js", status=200, token=None)
    session = await call("POST", "/widget/v1/sessions", {"role": "echo"}, status=200, token=None)
    token = session["session_token"]
    await call("POST", "/widget/v1/messages", {"text": "hello"}, status=201, token=token)
    await call("GET", "/widget/v1/history?limit=5", status=200, token=token)
    await _widget_approval(call, edge, session)
    await call("POST", "/widget/v1/fresh", status=200, token=token)
    await call("POST", "/widget/v1/link-codes", status=201, token=token)
    code = await edge.post("/api/v1/persons", {"display_name": "Dee"})
    link = await edge.post(f"/api/v1/persons/{code.body['slug']}/link-codes")
    linked = await call("POST", "/widget/v1/link", {"code": link.body["code"]}, status=200,
                        token=token)  # fmt: skip
    token = linked["session_token"]  # the visitor is Dee now
    url = edge.server.make_url(f"/widget/v1/stream?token={token}")
    async with edge.session.get(url) as stream:
        assert stream.status == 200
        first = await stream.content.readline()
        assert first.strip(), "the stream opens with its ready event"
        reply = Reply(stream.status, first.decode(), stream.headers)
        call.exercised.add(call.doc.check("GET", "/widget/v1/stream", reply))


async def _widget_approval(call: Scenario, edge: Edge, session: dict[str, Any]) -> None:
    """The role asks in the widget's conversation; the visitor answers there."""
    database = edge.server.app[DATABASE_KEY]
    asked = await database.approvals.request(
        ThreadId(session["conversation"]),
        "run1",
        Address("role:echo"),
        ApprovalRequest(
            title="Restart?",
            description=None,
            options=YES_NO,
            tool=ToolCallAsked(name="execute", arguments={"command": "restart"}),
            approvers=(),
            expires_at=database.approvals.now() + timedelta(minutes=5),
        ),
    )
    token = session["session_token"]
    await call("GET", "/widget/v1/history?limit=5", status=200, token=token)
    path = f"/widget/v1/approvals/{asked.id}"
    await call("POST", path, {"option": "yes"}, status=200, token=token)
    await call("POST", path, {"option": "no"}, status=409, token=token)


async def _callbacks(call: Scenario, ids: dict[str, str]) -> None:
    body = encode({"key": "INC-1", "title": "Printer on fire"})
    headers = standard_headers(body, delivery=new_id())
    await call("POST", "/hooks/tracker", raw=body, headers=headers, status=200, token=None)
    await call("POST", "/hooks/nowhere", raw=body, headers=headers, status=404, token=None)
    # No role here has a Slack app: each answers 404 `unknown_role`, in the one error shape.
    await call("POST", "/slack/echo/events", raw=b"{}", status=404, token=None)
    await call("POST", "/slack/echo/interactivity", raw=b"payload=%7B%7D", status=404, token=None)
    await call("GET", "/slack/echo/install", status=404, token=None)
    await call("GET", "/slack/echo/oauth_redirect", status=404, token=None)
