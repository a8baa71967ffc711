"""The audit trail over real HTTP (`gateway.api.audit`): every operator action through the API
leaves exactly one record — the token's name as actor, the client's address, the action, what it
acted on, the request's id — and a refused request leaves none; the trail is read in pages and
filtered, and nothing can change it through the API. Every route that changes something is
declared audited, and docs/audit.md names every action."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from channels.edge.requests import DATABASE_KEY
from core.model.approvals import YES_NO, ApprovalRequest
from core.model.audit import ACTIONS
from core.model.participants import Address
from core.model.timeline import ThreadId
from gateway.api.audit import actions_of
from gateway.api.tools import TOOLS_PREFIX
from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import ECHO, SLOW, TOKEN, Api, Reply
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
CHANGES = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
def settings(tmp_path: Path, sqlite_url: str) -> Settings:
    """`gateway`'s (roles echo and slow), with outbound endpoints allowed on loopback."""
    return make_settings(tmp_path, database_url=sqlite_url, endpoints_allow_private=True)


async def trail(api: Api, query: str = "") -> dict[str, Any]:
    reply = await api.get(f"/api/v1/audit{query}")
    assert reply.status == 200, reply.text
    page: dict[str, Any] = reply.body
    return page


async def head(api: Api) -> int:
    """The position of the newest record (0: none yet)."""
    records = (await trail(api, "?latest=true&limit=1"))["records"]
    return int(records[-1]["position"]) if records else 0


class Operator:
    """Calls as one operator token, each checked to leave exactly one record."""

    def __init__(self, api: Api, token: str, name: str) -> None:
        self.api = api
        self.token = token
        self.name = name
        self.recorded: list[str] = []
        self._reply: Reply | None = None

    @property
    def reply(self) -> Reply:
        """The answer to the last call."""
        assert self._reply is not None
        return self._reply

    async def __call__(
        self, method: str, path: str, body: Any = None, *, action: str, status: int = 200
    ) -> dict[str, Any]:
        """Call; assert the status and the one record `action` it left; return its detail."""
        before = await head(self.api)
        if body is None and method == "POST":
            body = {}
        reply = await self.api.call(method, path, json=body, token=self.token)
        assert reply.status == status, reply.text
        records = (await trail(self.api, f"?after={before}"))["records"]
        assert [r["action"] for r in records] == [action], records
        [record] = records
        assert record["actor"] == self.name
        assert record["client"] == "127.0.0.1"
        assert record["request_id"] == reply.headers["X-Request-Id"]
        assert datetime.now(UTC) - _at(record) < timedelta(minutes=1)
        self.recorded.append(action)
        self._reply = reply
        detail: dict[str, Any] = record["detail"]
        return detail


def _at(record: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(record["at"].replace("Z", "+00:00"))


async def test_each_operator_action_leaves_one_record_with_its_actor(gateway: Api) -> None:
    made = await gateway.post("/api/v1/tokens", {"name": "alice"})
    assert made.status == 201, made.text
    [first] = (await trail(gateway))["records"]
    assert (first["actor"], first["action"], first["detail"]) == (
        "default",  # the configured token
        "token.create",
        {"name": "alice"},
    )
    alice = Operator(gateway, made.body["token"], "alice")

    thread = await _threads(alice)
    run = await _runs(alice, gateway, thread)
    await _tasks_and_approvals(alice, gateway, thread, run)
    await _people(alice)
    await _endpoints(alice)
    made = await gateway.post("/api/v1/tokens", {"name": "bob"})
    detail = await alice("DELETE", "/api/v1/tokens/bob", action="token.revoke")
    assert detail == {"name": "bob"}
    await alice("POST", "/api/v1/tokens", {"name": "carol"}, action="token.create", status=201)
    assert made.body["token"] not in str((await trail(gateway, "?limit=500"))["records"])

    assert gateway.server.app is not None
    declared = {a for r in gateway.server.app.router.routes() for a in actions_of(r.handler)}
    # A retry needs a failed run, which these roles never have: tests/api/test_api_runs.py
    # checks its one record.
    missing = declared - set(alice.recorded) - {"token.create", "run.retry"}
    assert missing == set(), f"actions no step of this scenario exercises: {missing}"


async def _threads(call: Operator) -> str:
    detail = await call("POST", "/api/v1/threads", {"participants": ["person:ann", "role:echo"]},
                        action="thread.resolve", status=201)  # fmt: skip
    thread = detail["thread_id"]
    assert detail == {"thread_id": thread, "created": True}
    again = await call("POST", "/api/v1/threads", {"participants": ["role:echo", "person:ann"]},
                       action="thread.resolve")  # fmt: skip
    assert again == {"thread_id": thread, "created": False}
    policy = await call("PATCH", f"/api/v1/threads/{thread}", {"memory_policy": {
        "thread_only": False}}, action="thread.memory_policy")  # fmt: skip
    assert (policy["before"], policy["after"]) == ({"thread_only": True}, {"thread_only": False})
    said = await call("POST", f"/api/v1/threads/{thread}/messages",
                      {"author": "person:ann", "text": "a secret plan"}, action="message.post",
                      status=201)  # fmt: skip
    assert said == {"thread_id": thread, "message_id": said["message_id"],
                    "author": "person:ann", "channel": "api"}  # fmt: skip
    await call("POST", f"/api/v1/threads/{thread}/messages/{said['message_id']}/retract",
               {"author": "person:ann"}, action="message.retract", status=201)  # fmt: skip
    path = f"/api/v1/threads/{thread}/participants/person:ann"
    removed = await call("POST", path, {"state": "removed"}, action="participant.remove")
    assert (removed["participant"], removed["before"], removed["after"]) == (
        "person:ann", "active", "removed")  # fmt: skip
    await call("POST", path, {"state": "active"}, action="participant.readd")
    return str(thread)


async def _runs(call: Operator, api: Api, thread: str) -> str:
    await api.say(thread, "person:ann", "hello")

    async def run_of(thread: str, running: bool = False) -> str | None:
        runs = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return runs[0]["id"] if runs and (runs[0]["running"] or not running) else None

    run = await eventually(lambda: run_of(thread), what="the run of ann's conversation")
    token = await call("POST", f"/api/v1/runs/{run}/token", action="run.token_minted", status=201)
    assert token == {"run_id": run}  # never the token
    assert call.reply.body["token"] not in str(await trail(api, "?limit=500"))
    fresh = await call("POST", f"/api/v1/runs/{run}/sessions", action="run.start_fresh",
                       status=201)  # fmt: skip
    assert fresh["before"]["session"] + 1 == fresh["after"]["session"]
    watched = await call("POST", f"/api/v1/runs/{run}/subscriptions",
                         {"external_key": "tracker:INC-1"}, action="run.subscribe",
                         status=201)  # fmt: skip
    assert (watched["external_key"], watched["new"]) == ("tracker:INC-1", True)
    slow = (await api.thread("person:cat", "role:slow"))["id"]
    await api.say(slow, "person:cat", "take your time")
    busy = await eventually(lambda: run_of(slow, running=True), what="slow's turn running")
    cancelled = await call("POST", f"/api/v1/runs/{busy}/cancel", action="run.cancel")
    assert (cancelled["run_id"], cancelled["thread_id"]) == (busy, slow)
    return run


async def _tasks_and_approvals(call: Operator, api: Api, thread: str, run: str) -> None:
    made = await call("POST", "/api/v1/tasks", {"author": "person:ann", "title": "Printer"},
                      action="task.create", status=201)  # fmt: skip
    task = made["task_id"]
    changed = await call("PATCH", f"/api/v1/tasks/{task}", {"author": "person:ann",
                         "status": "in_progress", "title": "Printer 2"},
                         action="task.update")  # fmt: skip
    assert changed["fields"] == ["status", "title"]
    assert changed["status"] == {"from": "open", "to": "in_progress"}
    assert "title" not in changed  # named, not copied
    await call("POST", f"/api/v1/tasks/{task}/comments", {"author": "person:ann", "text": "ok"},
               action="task.comment", status=201)  # fmt: skip
    assert api.server.app is not None
    asked = await api.server.app[DATABASE_KEY].approvals.request(
        ThreadId(thread), run, Address("role:echo"), ApprovalRequest(
            title="Restart?", description=None, options=YES_NO, tool=None, approvers=(),
            expires_at=datetime.now(UTC) + timedelta(minutes=5)))  # fmt: skip
    answered = await call("POST", f"/api/v1/approvals/{asked.id}",
                          {"option": "yes", "as": "person:ann"},
                          action="approval.answer")  # fmt: skip
    assert answered == {"approval_id": asked.id, "thread_id": thread, "answerer": "person:ann",
                        "option": "yes", "channel": "api"}  # fmt: skip
    stored = await api.post("/api/v1/tools/store", {"payload": {"text": "x"}},
                            token=await _run_token(api, run))  # fmt: skip
    entry = stored.body["result"]["id"]
    redacted = await call("POST", f"/api/v1/roles/echo/memory/{entry}/redact", {},
                          action="memory.redact", status=201)  # fmt: skip
    assert (redacted["role"], redacted["entry_id"]) == ("echo", entry)


async def _run_token(api: Api, run: str) -> str:
    minted = await api.post(f"/api/v1/runs/{run}/token")
    token: str = minted.body["token"]
    return token


async def _people(call: Operator) -> None:
    await call("POST", "/api/v1/persons", {"display_name": "Bea", "slug": "bea"},
               action="person.create", status=201)  # fmt: skip
    await call("POST", "/api/v1/persons", {"display_name": "Cy", "slug": "cy"},
               action="person.create", status=201)  # fmt: skip
    named = await call("PATCH", "/api/v1/persons/bea", {"display_name": "Bea Lee"},
                       action="person.update")  # fmt: skip
    assert named["fields"] == ["display_name"] and "Bea Lee" not in str(named)
    off = await call("PATCH", "/api/v1/persons/bea", {"active": False}, action="person.deactivate")
    assert (off["before"], off["after"]) == ({"active": True}, {"active": False})
    await call("PATCH", "/api/v1/persons/bea", {"active": True}, action="person.activate")
    linked = await call("POST", "/api/v1/persons/cy/identities", {"identity": "web:default:cy"},
                        action="person.link", status=201)  # fmt: skip
    assert linked == {"slug": "cy", "identity": "web:default:cy", "linked": True}
    code = await call("POST", "/api/v1/persons/bea/link-codes", action="person.link_code",
                      status=201)  # fmt: skip
    assert call.reply.body["code"] not in str(code)
    redeemed = await call("POST", "/api/v1/link-codes/redeem",
                          {"code": call.reply.body["code"], "identity": "slack:t1:u1"},
                          action="person.link")  # fmt: skip
    assert redeemed == {"slug": "bea", "identity": "slack:t1:u1", "moved_from": None}
    await call("POST", "/api/v1/persons/bea/link-codes", action="person.link_code", status=201)
    merged = await call("POST", "/api/v1/link-codes/redeem",
                        {"code": call.reply.body["code"], "identity": "web:default:cy"},
                        action="person.merge")  # fmt: skip
    assert merged == {"slug": "cy", "into": "bea", "identity": "web:default:cy"}
    erased = await call("DELETE", "/api/v1/persons/bea?erase=true", action="person.erase")
    assert erased["slug"] == "bea" and erased["erased"]["identities"] == 2


async def _endpoints(call: Operator) -> None:
    async def receive(request: web.Request) -> web.Response:
        return web.Response()

    async with serve(receive) as receiver:
        url = str(receiver.make_url("/hook"))
        made = await call("POST", "/api/v1/endpoints", {"url": url, "kinds": ["message"]},
                          action="endpoint.create", status=201)  # fmt: skip
        endpoint = made["endpoint_id"]
        assert made["url"] == url and call.reply.body["secret"] not in str(made)
        replayed = await call("POST", f"/api/v1/endpoints/{endpoint}/replay",
                              {"from_position": 1}, action="endpoint.replay")  # fmt: skip
        assert replayed["after"]["position"] == 0
        await call("DELETE", f"/api/v1/endpoints/{endpoint}", action="endpoint.delete")


async def test_a_refused_request_leaves_no_record(gateway: Api) -> None:
    thread = (await gateway.thread("person:ann", "role:echo"))["id"]
    before = await head(gateway)
    refusals: list[tuple[str, str, Any, int]] = [
        ("POST", "/api/v1/threads", {"participants": "nope"}, 422),
        ("POST", f"/api/v1/threads/{thread}/messages", {"author": "person:zed", "text": "x"}, 403),
        ("POST", f"/api/v1/runs/{'0' * 32}/cancel", {}, 404),
        ("PATCH", "/api/v1/persons/nobody", {"active": False}, 404),
        ("POST", "/api/v1/tokens", {"name": "default"}, 409),
        ("DELETE", "/api/v1/tokens/nobody", None, 404),
        ("DELETE", f"/api/v1/endpoints/{'0' * 32}", None, 404),
    ]
    for method, path, body, status in refusals:
        reply = await gateway.call(method, path, json=body)
        reply.error(status)
    unauthorized = await gateway.post("/api/v1/tokens", {"name": "x"}, token="wrong")
    unauthorized.error(401)
    assert await head(gateway) == before
    assert (await trail(gateway, f"?after={before}"))["records"] == []


async def test_nothing_changes_the_trail_through_the_api(api: Api) -> None:
    await api.post("/api/v1/tokens", {"name": "ci"})
    before = await trail(api)
    for method in CHANGES:
        reply = await api.call(method, "/api/v1/audit", json={"position": 1})
        reply.error(405)
    for method in ("GET", *CHANGES):
        (await api.call(method, "/api/v1/audit/1")).error(404)
    assert await trail(api) == before


async def test_the_trail_reads_in_pages_forward_and_back_and_filters(api: Api) -> None:
    for name in ("a1", "a2", "a3", "a4"):
        await api.post("/api/v1/tokens", {"name": name})
    await api.call("DELETE", "/api/v1/tokens/a2")

    page = await trail(api, "?limit=2")
    assert [r["position"] for r in page["records"]] == [1, 2]
    assert (page["next"], page["more"]) == (2, True)
    rest = await trail(api, f"?after={page['next']}&limit=10")
    assert [r["position"] for r in rest["records"]] == [3, 4, 5]
    assert (rest["next"], rest["more"]) == (5, False)
    newest = await trail(api, "?latest=true&limit=2")
    assert [r["position"] for r in newest["records"]] == [4, 5]
    assert (newest["next"], newest["more"]) == (4, True)
    earlier = await trail(api, f"?before={newest['next']}&limit=10")
    assert [r["position"] for r in earlier["records"]] == [1, 2, 3]
    assert (earlier["next"], earlier["more"]) == (None, False)
    revoked = await trail(api, "?action=token.revoke")
    assert [(r["actor"], r["detail"]) for r in revoked["records"]] == [("default", {"name": "a2"})]
    assert len((await trail(api, "?actor=default"))["records"]) == 5
    assert (await trail(api, "?actor=a1"))["records"] == []

    for query, code in (
        ("?after=1&before=3", "conflicting_parameters"),
        ("?latest=true&before=3", "conflicting_parameters"),
        ("?action=token.explode", "invalid_action"),
        ("?actor=Not%20A%20Name", "invalid_token_name"),
        ("?limit=0", "invalid_parameter"),
        ("?whatever=1", "unknown_parameter"),
    ):
        (await api.get(f"/api/v1/audit{query}")).error(422, code)


async def test_the_client_is_the_edge_s_own_reading_of_the_address(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Behind a trusted proxy, the address `X-Forwarded-For` names; otherwise the peer's, whatever
    the header says."""
    for trusted, expected in (("127.0.0.1/32", "203.0.113.9"), ("10.0.0.0/8", "127.0.0.1")):
        var = tmp_path / trusted.replace("/", "_")
        var.mkdir()
        settings = make_settings(var, trusted_proxies=trusted)
        async with (
            serve(build_app(settings, api_token=TOKEN)) as server,
            aiohttp.ClientSession() as session,
        ):
            api = Api(server, session)
            headers = {"X-Forwarded-For": "198.51.100.1, 203.0.113.9"}
            reply = await api.call("POST", "/api/v1/tokens", json={"name": "ci"}, headers=headers)
            assert reply.status == 201, reply.text
            [record] = (await trail(api))["records"]
            assert record["client"] == expected


def test_every_route_that_changes_something_is_audited_and_no_read_is(
    gateway_app: web.Application,
) -> None:
    unaudited = []
    for route in gateway_app.router.routes():
        assert route.resource is not None
        path = route.resource.canonical
        operator = path.startswith("/api/v1/") and not path.startswith(TOOLS_PREFIX)
        actions = actions_of(route.handler)
        if operator and route.method in CHANGES and not actions:
            unaudited.append(f"{route.method} {path}")
        if route.method in ("GET", "HEAD"):
            assert not actions, f"a read is audited: {route.method} {path}"
        assert actions <= set(ACTIONS)
    assert unaudited == [], "operator routes that change something but record nothing"


def test_docs_audit_names_every_action() -> None:
    text = (ROOT / "docs" / "audit.md").read_text()
    missing = [action for action in ACTIONS if f"`{action}`" not in text]
    assert missing == [], f"docs/audit.md does not name {missing}"


@pytest.fixture
def gateway_app(settings: Settings) -> web.Application:
    return build_app(settings, api_token=TOKEN, roles={"echo": ECHO, "slow": SLOW})
