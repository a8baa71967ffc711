"""Every failure is `{"error": {"code", "message"}}` with the right status, and never a 500.

Covers what the routes share: the body (not JSON, not an object, too large), the operator token,
unknown routes and wrong methods, and — in a bare app holding only the error middleware — an
unexpected exception, whose traceback reaches the log and not the client.
"""

from __future__ import annotations

import io
import json
import logging

import aiohttp
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from channels.edge.errors import translate_errors
from tests.api.conftest import Api
from tests.serving import serve

ALICE, SUPPORT = "person:alice", "role:support"


@pytest.fixture
async def thread_id(api: Api) -> str:
    thread = await api.thread(ALICE, SUPPORT)
    return str(thread["id"])


# -- the body -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"not json",
        b"",
        b'{"author": "person:alice", "text": "hi",}',
        b"\xff\xfe{}",
        b"NaN",
        b'{"author": "person:alice", "text": Infinity}',
        b"[" * 100_000,
    ],
    ids=["truncated", "words", "empty", "trailing-comma", "not-utf8", "nan", "infinity", "deep"],
)
async def test_a_body_that_is_not_json_is_400_invalid_json(
    api: Api, thread_id: str, body: bytes
) -> None:
    reply = await api.call(
        "POST",
        f"/api/v1/threads/{thread_id}/messages",
        data=body,
        headers={"Content-Type": "application/json"},
    )

    reply.error(400, "invalid_json")


@pytest.mark.parametrize("body", [[ALICE, SUPPORT], "text", 42, None, True])
async def test_json_that_is_not_an_object_is_422_invalid_body(api: Api, body: object) -> None:
    reply = await api.call("POST", "/api/v1/threads", data=json.dumps(body))

    message = reply.error(422, "invalid_body")
    assert "JSON object" in message


async def test_a_body_over_the_size_limit_is_413_json_and_nothing_is_stored(
    api: Api, thread_id: str
) -> None:
    body = json.dumps({"author": ALICE, "text": "x" * 1_048_576}).encode()

    reply = await api.call("POST", f"/api/v1/threads/{thread_id}/messages", data=io.BytesIO(body))

    assert "1048576 bytes" in reply.error(413, "body_too_large")
    assert (await api.timeline(thread_id))["events"] == []


async def test_a_json_body_is_read_whatever_its_content_type(api: Api) -> None:
    reply = await api.call(
        "POST",
        "/api/v1/threads",
        data=json.dumps({"participants": [ALICE, SUPPORT]}),
        headers={"Content-Type": "text/plain"},
    )

    assert reply.status == 201


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    )
    | st.fixed_dictionaries(
        {"author": st.sampled_from([ALICE, SUPPORT, "person:x", "x", 1])},
        optional={
            "text": st.text() | st.integers(),
            "context": st.none()
            | st.dictionaries(st.sampled_from(["kind", "task", "x"]), st.text()),
        },
    )
)
async def test_no_message_body_whatever_its_shape_produces_a_500(
    api: Api, thread_id: str, body: object
) -> None:
    reply = await api.post(f"/api/v1/threads/{thread_id}/messages", body)

    if reply.status != 201:
        assert reply.status in (400, 403, 413, 422), reply.text
        reply.error(reply.status)


# -- the operator token ---------------------------------------------------------------------


API_ROUTES = [
    ("POST", "/api/v1/threads"),
    ("GET", "/api/v1/threads?participant=person:alice"),
    ("GET", "/api/v1/threads/{id}"),
    ("PATCH", "/api/v1/threads/{id}"),
    ("POST", "/api/v1/threads/{id}/messages"),
    ("POST", "/api/v1/threads/{id}/messages/m/retract"),
    ("POST", "/api/v1/threads/{id}/participants/person:alice"),
    ("GET", "/api/v1/threads/{id}/timeline"),
    ("GET", "/api/v1/no-such-route"),
    ("GET", "/api/v1"),
]


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token-wrong-token",
        "Bearer ",
        "Basic dGVzdC1vcGVyYXRvci10b2tlbi0wMTIzNDU2Nzg5",
        "test-operator-token-0123456789",
        "Bearer test-operator-token-0123456789x",
        "Bearer tést-öperator-token",
    ],
    ids=["missing", "wrong", "empty", "basic", "no-scheme", "longer", "non-ascii"],
)
async def test_every_api_route_without_the_right_token_is_401(
    api: Api, thread_id: str, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for method, path in API_ROUTES:
        reply = await api.call(
            method,
            path.format(id=thread_id),
            json={"author": ALICE, "text": "sneaky"},
            token=None,
            headers=headers,
        )
        reply.error(401, "unauthorized")
        assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    assert (await api.timeline(thread_id))["events"] == []


async def test_the_bearer_scheme_is_case_insensitive(api: Api) -> None:
    reply = await api.get(
        f"/api/v1/threads?participant={ALICE}",
        token=None,
        headers={"Authorization": f"bearer {api.token}"},
    )

    assert reply.status == 200


async def test_healthz_and_metrics_are_open_without_a_token(api: Api) -> None:
    assert (await api.get("/healthz", token=None)).status == 200
    assert (await api.get("/metrics", token=None)).status == 200


# -- routing --------------------------------------------------------------------------------


async def test_an_unknown_route_is_404_json(api: Api) -> None:
    for path in ["/nope", "/api/v2/threads", "/api/v1/threads/x/y/z"]:
        message = (await api.get(path)).error(404, "not_found")
        assert path in message


async def test_a_wrong_method_is_405_json_naming_the_allowed_ones(api: Api, thread_id: str) -> None:
    cases = [
        ("DELETE", f"/api/v1/threads/{thread_id}", {"GET", "HEAD", "PATCH"}),
        ("GET", f"/api/v1/threads/{thread_id}/messages", {"POST"}),
        ("PUT", "/api/v1/threads", {"GET", "HEAD", "POST"}),
        ("POST", "/healthz", {"GET", "HEAD"}),
    ]
    for method, path, allowed in cases:
        reply = await api.call(method, path)
        message = reply.error(405, "method_not_allowed")
        assert method in message
        assert set(reply.headers["Allow"].replace(" ", "").split(",")) == allowed


# -- the unexpected -------------------------------------------------------------------------


async def test_an_unexpected_exception_is_500_internal_with_the_traceback_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("secret internals: password=hunter2")

    app = web.Application(middlewares=[translate_errors])
    app.router.add_get("/broken", broken)
    async with (
        serve(app) as server,
        aiohttp.ClientSession() as session,
        session.get(server.make_url("/broken")) as resp,
    ):
        status, text = resp.status, await resp.text()

    assert status == 500
    assert json.loads(text)["error"]["code"] == "internal"
    assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text
    [record] = [r for r in caplog.records if r.name == "rolecall.gateway"]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and "hunter2" in str(record.exc_info[1])
