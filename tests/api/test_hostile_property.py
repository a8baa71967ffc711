"""Property: nothing a client sends to any write route makes a 5xx, or hurts anyone else's requests.

Against a real gateway over real HTTP, on SQLite and PostgreSQL (`tests/api/edge.py`), Hypothesis
sends arbitrary JSON — strings with lone surrogates, NULs, control characters, huge strings and
deep nesting; numbers such as `1e999`, 2^63, -2^64 and integers of thousands of digits; raw
tokens JSON does not have (`NaN`, `Infinity`) — as raw bytes (`\\ud800` escapes, as a hostile
client writes them, so the gateway's own parser reads them), as whole bodies or as the values of
the fields each route takes, and sometimes in the path's id too:

- to every write route of the API, to the widget's routes, to every agent tool, and to the
  signed webhook route (validly signed, so the payload itself is what is tested);
- each answer is below 500, and every refusal has the one error shape;
- between the bad requests, valid ones — a person's message to their conversation with `echo`
  (answered: the reply is waited for), a widget visitor's message (answered too), a tool call, a
  webhook delivery — all succeed.

Bounded: a modest number of examples per surface, no deadline (the gateway does real I/O).
"""

from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine.tools import TOOLS
from tests.api.conftest import Reply
from tests.api.edge import Edge, dumps, edge_gateway  # noqa: F401  (the fixture `edge`)
from tests.waiting import eventually
from tests.webhooks.conftest import github_headers, standard_headers


class Raw:
    """Bytes to write into the JSON as they are: what no encoder of ours would write."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"Raw({self.data[:40]!r}{'…' if len(self.data) > 40 else ''})"


def encode(value: Any) -> bytes:
    """JSON bytes, ASCII only (lone surrogates as `\\udxxx`), `Raw` parts verbatim."""
    if isinstance(value, Raw):
        return value.data
    if isinstance(value, dict):
        items = (dumps(str(k)) + b": " + encode(v) for k, v in value.items())
        return b"{" + b", ".join(items) + b"}"
    if isinstance(value, list):
        return b"[" + b", ".join(encode(v) for v in value) + b"]"
    return dumps(value)


SPECIAL_CHARACTERS = ["\ud800", "\udfff", "\udbff\udc00"[0], "\x00", "\x1b", "\u2028", "\ufeff"]
characters = st.characters(exclude_categories=()) | st.sampled_from(SPECIAL_CHARACTERS)
texts = st.text(characters, max_size=40) | st.sampled_from(
    ["x" * 200_000, "\ud800" * 1000, "person:ann\x00", "echo\udc80", ""]
)
numbers = (
    st.integers()
    | st.sampled_from([2**63, 2**63 - 1, -(2**63), -(2**64), 10**30, 2**1000])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(
        [Raw(b"1e999"), Raw(b"-1e999"), Raw(b"NaN"), Raw(b"Infinity"), Raw(b"1" + b"0" * 5000)]
    )
)
scalars = st.none() | st.booleans() | numbers | texts
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
) | st.integers(min_value=30, max_value=3000).map(
    lambda depth: Raw(b"[" * depth + b"1" + b"]" * depth)
)


def bodies(fields: list[str]) -> st.SearchStrategy[bytes]:
    """A whole hostile body, or the route's own fields with hostile values, or raw junk."""
    shaped = st.fixed_dictionaries({}, optional={name: values for name in fields})
    return (
        values.map(encode)
        | shaped.map(encode)
        | st.binary(max_size=64)
        | st.sampled_from([b"", b"{", b'{"a": 1} x', b"\xef\xbb\xbf{}", b'"\\ud800"'])
    )


ids = st.sampled_from(["x", "%00", "%ED%A0%80", "a" * 300]) | texts.map(
    lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")[:200] or "x"
)

API_ROUTES: list[tuple[str, str, list[str]]] = [
    ("POST", "/api/v1/threads", ["participants"]),
    ("PATCH", "/api/v1/threads/{thread}", ["memory_policy"]),
    ("POST", "/api/v1/threads/{thread}/messages", ["author", "text", "context", "channel"]),
    ("POST", "/api/v1/threads/{thread}/messages/{id}/retract", ["author", "reason"]),
    ("POST", "/api/v1/threads/{thread}/participants/person:ann", ["state"]),
    ("POST", "/api/v1/tasks", ["author", "title", "body", "assignee", "external"]),
    ("PATCH", "/api/v1/tasks/{id}", ["author", "title", "body", "status", "assignee"]),
    ("POST", "/api/v1/tasks/{id}/comments", ["author", "text"]),
    ("POST", "/api/v1/persons", ["slug", "display_name", "email"]),
    ("PATCH", "/api/v1/persons/bob", ["active", "display_name", "email"]),
    ("POST", "/api/v1/persons/bob/identities", ["identity"]),
    ("POST", "/api/v1/persons/bob/link-codes", ["ttl_seconds"]),
    ("POST", "/api/v1/link-codes/redeem", ["code", "identity"]),
    ("POST", "/api/v1/endpoints", ["url", "kinds", "roles", "threads", "from_position"]),
    ("POST", "/api/v1/endpoints/{id}/replay", ["from_position", "from_task_position"]),
    ("POST", "/api/v1/runs/{run}/cancel", []),
    ("POST", "/api/v1/runs/{run}/subscriptions", ["task_id", "external_key"]),
    ("POST", "/api/v1/roles/echo/memory/{id}/redact", ["reason"]),
]
WIDGET_ROUTES: list[tuple[str, list[str]]] = [
    ("/widget/v1/sessions", ["role", "site", "user_token", "visitor_token"]),
    ("/widget/v1/messages", ["text"]),
    ("/widget/v1/link-codes", []),
    ("/widget/v1/link", ["code"]),
]

EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def refused_well(reply: Reply) -> None:
    assert reply.status < 500, reply.text
    if reply.status >= 400:
        reply.error(reply.status)


class Conversation:
    """Ann's conversation with `echo`, spoken to between the hostile requests: every message is
    accepted and answered."""

    def __init__(self, edge: Edge, thread: str, run: str, token: str) -> None:
        self.edge, self.thread, self.run, self.token = edge, thread, run, token

    async def say_and_hear(self) -> None:
        text = f"still here {uuid.uuid4().hex}"
        await self.edge.say(self.thread, "person:ann", text)

        async def answered() -> bool:
            page = await self.edge.timeline(self.thread, "?latest=true&limit=20")
            return any(
                e.get("author") == "role:echo" and e.get("text") == text for e in page["events"]
            )

        await eventually(answered)


async def _conversation(edge: Edge) -> Conversation:
    """Ann's conversation, made at the first example and kept on the gateway's `Edge` (one
    gateway serves every example of a test: their requests interleave on it)."""
    known: Conversation | None = getattr(edge, "conversation", None)
    if known is None:
        thread, run, token = await edge.run_token("person:ann")
        reply = await edge.post("/api/v1/persons", {"slug": "bob", "display_name": "Bob"})
        assert reply.status == 201, reply.text
        known = Conversation(edge, thread, run, token)
        edge.conversation = known  # type: ignore[attr-defined]
    return known


@EXAMPLES
@given(data=st.data())
async def test_no_api_write_route_gives_a_5xx_and_valid_messages_are_answered(
    edge: Edge, data: st.DataObject
) -> None:
    conversation = await _conversation(edge)
    method, template, fields = data.draw(st.sampled_from(API_ROUTES), label="route")
    path = template.format(
        thread=data.draw(st.just(conversation.thread) | ids, label="thread"),
        run=data.draw(st.just(conversation.run) | ids, label="run"),
        id=data.draw(ids, label="id"),
    )
    body = data.draw(bodies(fields), label="body")
    refused_well(await edge.raw(method, path, body))
    await conversation.say_and_hear()


@EXAMPLES
@given(data=st.data())
async def test_no_widget_route_gives_a_5xx_and_visitors_are_answered(
    edge: Edge, data: st.DataObject
) -> None:
    known: tuple[dict[str, str], str] | None = getattr(edge, "widget_visitor", None)
    if known is None:
        session = await edge.raw("POST", "/widget/v1/sessions", dumps({"role": "echo"}), token=None)
        assert session.status == 200, session.text
        known = ({"Authorization": f"Bearer {session.body['session_token']}"},
                 session.body["conversation"])  # fmt: skip
        edge.widget_visitor = known  # type: ignore[attr-defined]
    visitor, thread = known
    path, fields = data.draw(st.sampled_from(WIDGET_ROUTES), label="route")
    body = data.draw(bodies(fields), label="body")
    refused_well(await edge.raw("POST", path, body, headers=visitor, token=None))
    refused_well(await edge.raw("POST", path, body, token=None))  # anonymous, no session

    text = f"visitor still here {uuid.uuid4().hex}"
    said = await edge.raw(
        "POST", "/widget/v1/messages", dumps({"text": text}), headers=visitor, token=None
    )
    assert said.status == 201, said.text

    async def answered() -> bool:
        page = await edge.timeline(thread, "?latest=true&limit=20")
        return any(e.get("author") == "role:echo" and e.get("text") == text
                   for e in page["events"])  # fmt: skip

    await eventually(answered)


TOOL_NAMES = sorted(TOOLS)


@EXAMPLES
@given(data=st.data())
async def test_no_tool_call_gives_a_5xx_over_http(edge: Edge, data: st.DataObject) -> None:
    conversation = await _conversation(edge)
    token = conversation.token
    name = data.draw(st.sampled_from(TOOL_NAMES), label="tool")
    body = data.draw(bodies(TOOLS[name].arguments), label="arguments")
    refused_well(await edge.raw("POST", f"/api/v1/tools/{name}", body, token=token))
    stored = await edge.raw(
        "POST", "/api/v1/tools/store", dumps({"payload": {"n": 1}}), token=token
    )
    assert stored.status == 200, stored.text
    recalled = await edge.raw(
        "POST", "/api/v1/tools/recall", dumps({"where": {"n": 1}}), token=token
    )
    assert recalled.status == 200, recalled.text  # nothing stored before poisons recall
    await conversation.say_and_hear()


GENERIC_FIELDS = ["key", "url", "title", "body", "status", "comment"]


@EXAMPLES
@given(data=st.data())
async def test_no_signed_webhook_payload_gives_a_5xx(edge: Edge, data: st.DataObject) -> None:
    conversation = await _conversation(edge)
    body = data.draw(bodies(GENERIC_FIELDS), label="payload")
    delivery = uuid.uuid4().hex
    try:
        headers = standard_headers(body, delivery=delivery)
    except UnicodeDecodeError:  # Standard Webhooks signs text; GitHub's scheme signs bytes
        headers = github_headers(body, event="issues", delivery=delivery)
        refused_well(await edge.deliver("gh", body, headers))
    else:
        refused_well(await edge.deliver("tracker", body, headers))
    good = json.dumps({"key": f"K-{delivery}", "title": "Fine"}).encode()
    fine = await edge.deliver("tracker", good, standard_headers(good, delivery=delivery + "g"))
    assert fine.status == 200, fine.text
    await conversation.say_and_hear()
