"""Properties of `/slack/{role}/events`, over arbitrary input (Hypothesis), against one real
gateway over real HTTP with the fake Slack behind it, on SQLite and PostgreSQL:

- whatever the headers and body of an unsigned request, the answer is 401 in the gateway's
  error shape;
- whatever a correctly signed body holds — any bytes, any JSON value, Events API envelopes with
  any field values (lone surrogates, NULs, huge and non-finite numbers, deep nesting) — the
  answer is never a 5xx, and a failure is in the gateway's error shape;
- nothing logged with a traceback meanwhile, and afterwards a person's message still gets its
  reply: nothing the odd requests left behind stops the delivery.

The gateway and the fake run in an event loop of their own, in a thread, so that Hypothesis
drives plain synchronous HTTP requests at it.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.slack.conftest import PROXY_VARIABLES
from tests.slack.dm_gateway import slack_gateway
from tests.slack.fake_slack import ALICE, BOB, FakeSlack, signed_request_headers

EVENTS = "/slack/echo/events"


@dataclass
class Running:
    port: int
    fake: FakeSlack
    loop: asyncio.AbstractEventLoop

    def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("POST", EVENTS, body=body, headers=headers)
            answer = connection.getresponse()
            return answer.status, answer.read()
        finally:
            connection.close()

    def signed(self, body: bytes) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"}
        headers |= signed_request_headers(body, self.fake.app.signing_secret)
        return self.post(body, headers)

    def in_loop(self, call: Any) -> Any:
        """Run `call()` in the gateway's loop (the fake is not thread-safe)."""

        async def run() -> Any:
            return call()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(30)


@pytest.fixture
def running(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Running]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    ready = threading.Event()
    box: dict[str, Any] = {}
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        stop = asyncio.Event()
        async with (
            FakeSlack(users=(ALICE, BOB)) as fake,
            slack_gateway(tmp_path, fake, database_url=database_url) as gw,
        ):
            assert gw.server.port is not None
            box.update(running=Running(gw.server.port, fake, loop), stop=stop)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the gateway did not start"
    try:
        yield box["running"]
    finally:
        loop.call_soon_threadsafe(box["stop"].set)
        thread.join(30)
        loop.close()


def _in_our_shape(status: int, body: bytes) -> None:
    assert status < 500, (status, body[:300])
    if status >= 400:
        answer = json.loads(body)
        assert set(answer) == {"error"} and set(answer["error"]) == {"code", "message"}, answer


# --- what is sent ----------------------------------------------------------------------------

_chars = st.characters() | st.characters(categories=["Cs"]) | st.just("\x00")
texts = st.text(_chars, max_size=40)
numbers = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([2**63, -(2**63) - 1, 10**400])
)
scalars = st.none() | st.booleans() | numbers | texts
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=12,
)


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


ids = st.text(st.characters(codec="ascii"), max_size=12) | texts | numbers | st.none()
plain_ids = st.text(st.characters(categories=["Lu", "Nd"], codec="ascii"), min_size=1, max_size=12)
stamps = st.integers(1_700_000_000_000_000, 1_800_000_000_000_000).map(
    lambda us: f"{us // 1_000_000}.{us % 1_000_000:06d}"
)


def _message_events(id_: Any, stamp: Any, inner: Any) -> Any:
    return st.fixed_dictionaries(
        {
            "type": st.just("message"),
            "channel_type": st.sampled_from(["im", "mpim", "channel"]) | texts,
            "user": st.sampled_from([ALICE.id, BOB.id]) | id_,
            "text": texts | values,
            "ts": stamp,
            "channel": id_,
        },
        optional={
            "subtype": st.sampled_from(["message_changed", "message_deleted", "bot_message"]) | id_,
            "thread_ts": stamp,
            "message": inner,
            "previous_message": inner,
            "bot_id": id_,
            "team": id_,
            "deleted_ts": stamp,
        },
    )


def _envelopes(kind: Any, id_: Any, event: Any) -> Any:
    return st.fixed_dictionaries(
        {"type": kind, "event_id": id_, "team_id": id_, "event": event},
        optional={
            "challenge": values,
            "api_app_id": id_,
            "authorizations": values,
            "deep": st.integers(min_value=30, max_value=40).map(_deep),
        },
    )


# Anything at all where Slack puts its fields ...
wild_envelopes = _envelopes(
    st.sampled_from(["event_callback", "url_verification"]) | texts,
    ids,
    _message_events(ids, ids | stamps, values) | values,
)
# ... and envelopes as Slack sends them but for a person's text (and, maybe, one nested field).
plausible_envelopes = _envelopes(
    st.just("event_callback"),
    plain_ids,
    _message_events(
        plain_ids,
        stamps,
        _message_events(plain_ids, stamps, st.none()),  # an edit's message, say
    ),
)
envelopes = wild_envelopes | plausible_envelopes


def _encoded(value: Any, ascii_only: bool) -> bytes:
    text = json.dumps(value, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate makes it invalid UTF-8


signed_bodies = (
    st.binary(max_size=300)
    | st.builds(_encoded, values, st.booleans())
    | st.builds(_encoded, envelopes, st.booleans())
)
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80)
unsigned_headers = st.fixed_dictionaries(
    {},
    optional={
        "X-Slack-Request-Timestamp": header_text | st.integers(0, 2**40).map(str),
        "X-Slack-Signature": header_text | header_text.map(lambda s: "v0=" + s),
        "Content-Type": st.sampled_from(["application/json", "text/plain", "x/y"]),
    },
)
PROPERTY = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def test_unsigned_requests_always_get_401_in_our_shape(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    @PROPERTY
    @given(body=signed_bodies, headers=unsigned_headers)
    def unsigned(body: bytes, headers: dict[str, str]) -> None:
        tried.append(body)
        status, answer = running.post(body, headers)
        assert status == 401, (headers, body[:100], answer[:200])
        _in_our_shape(status, answer)

    tried: list[bytes] = []
    with caplog.at_level(logging.INFO):
        unsigned()
    assert len(tried) >= PROPERTY.max_examples
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert running.in_loop(lambda: running.fake.calls()) == []


def test_signed_bodies_of_any_kind_never_get_a_5xx_and_replies_still_come(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    @PROPERTY
    @given(body=signed_bodies)
    def signed(body: bytes) -> None:
        tried.append(body)
        status, answer = running.signed(body)
        statuses.append(status)
        _in_our_shape(status, answer)

    tried: list[bytes] = []
    statuses: list[int] = []
    with caplog.at_level(logging.INFO):
        signed()
        assert len(tried) >= PROPERTY.max_examples
        assert {200, 400, 422} <= set(statuses), Counter(statuses)  # every path was taken
        # A person's message afterwards still gets its reply: nothing is stuck.
        payload = running.in_loop(lambda: running.fake.user_message(ALICE, "still there?"))
        status, answer = running.signed(json.dumps(payload).encode())
        assert status == 200, answer
        deadline = time.monotonic() + 30
        while not running.in_loop(
            lambda: [
                c
                for c in running.fake.calls("chat.postMessage", ok=True)
                if c.args.get("text") == "still there?"
            ]
        ):
            assert time.monotonic() < deadline, "the reply did not come"
            time.sleep(0.05)
    problems = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not problems, [r.getMessage() for r in problems]
