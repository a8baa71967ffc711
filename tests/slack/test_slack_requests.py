"""What reaches `/slack/{role}/events` that Slack did not send, or sent oddly, over real HTTP:

- unsigned, badly signed or stale requests get 401 in the gateway's shape whatever their
  headers and body hold (a timestamp that is not a number, a body that is not UTF-8, not an
  object, deeply nested, holding a huge number) — nothing of them is stored, nothing logged
  with a traceback;
- signed bodies that are not what Slack sends get a 4xx in the same shape, never a 5xx;
- a person's message whose text holds a lone surrogate or a NUL is refused politely in the DM,
  once (Slack's retry is recognised), and the next message is answered as usual;
- what bolt answers on its own (an event nothing handles) is in the gateway's shape too.
SQLite and PostgreSQL."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, FakeSlack, signed_request_headers
from tests.waiting import eventually

EVENTS = "/slack/echo/events"


async def _send(gw: SlackGateway, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    url = gw.server.make_url(EVENTS)
    async with gw.http.post(url, data=body, headers=headers) as answer:
        text = await answer.text()
        return answer.status, json.loads(text) if text.startswith("{") else text


def _signed(fake: FakeSlack, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        **signed_request_headers(body, fake.app.signing_secret),
    }


def _our_shape(answer: Any) -> tuple[str, str]:
    assert isinstance(answer, dict) and set(answer) == {"error"}, answer
    assert set(answer["error"]) == {"code", "message"}, answer
    return answer["error"]["code"], answer["error"]["message"]


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad]


async def _nothing_stored(gw: SlackGateway) -> None:
    reply = await gw.api.get("/api/v1/events?after=0")
    assert reply.status == 200 and reply.body["events"] == [], reply.text


NESTED = b"[" * 100_000 + b"]" * 100_000


async def test_unauthenticated_requests_get_401_in_our_shape_before_the_body_is_read(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    good = json.dumps(fake_slack.user_message(ALICE, "forged")).encode()
    now = str(int(time.time()))
    sig = signed_request_headers(good, fake_slack.app.signing_secret)["X-Slack-Signature"]
    cases: list[tuple[bytes, dict[str, str]]] = [
        (good, {}),  # no headers at all
        (good, {"X-Slack-Request-Timestamp": now}),  # no signature
        (good, {"X-Slack-Signature": sig}),  # no timestamp
        (good, {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": sig}),
        (good, {"X-Slack-Request-Timestamp": "1e3", "X-Slack-Signature": sig}),
        (good, {"X-Slack-Request-Timestamp": "9" * 400, "X-Slack-Signature": sig}),
        (good, {"X-Slack-Request-Timestamp": "-5", "X-Slack-Signature": sig}),
        (
            good,
            {"X-Slack-Request-Timestamp": str(int(time.time()) - 3600), "X-Slack-Signature": sig},
        ),
        (good, signed_request_headers(good, "not-the-secret")),
        (good + b" ", _signed(fake_slack, good)),  # the body changed after signing
        (
            b"\xff\xfe\x00not utf-8",
            {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": "v0=00"},
        ),
        (b"[1, 2, 3]", {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sig}),
        (NESTED, {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": sig}),
        (b'{"n": 1e999, "m": ' + b"9" * 5000 + b"}", {"X-Slack-Request-Timestamp": now}),
        (b'{"t": "\\ud800\\u0000"}', {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": "é"}),
    ]
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        with caplog.at_level(logging.INFO):
            for body, headers in cases:
                status, answer = await _send(
                    gw, body, {"Content-Type": "application/json", **headers}
                )
                assert status == 401, (headers, answer)
                code, message = _our_shape(answer)
                assert code == "invalid_signature" and "signed by Slack" in message
        _no_traceback(caplog)
        await _nothing_stored(gw)
    assert fake_slack.calls() == []  # nothing was acted on


async def test_signed_bodies_that_slack_would_not_send_get_a_4xx_in_our_shape(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    event = fake_slack.user_message(ALICE, "hello")

    def with_(**fields: Any) -> bytes:
        return json.dumps({**event, **fields}).encode()

    def with_event(**fields: Any) -> bytes:
        return json.dumps({**event, "event": {**event["event"], **fields}}).encode()

    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    cases: list[tuple[bytes, int, str]] = [
        (b"\xff\xfe not utf-8", 400, "invalid_body"),
        ('{"text": "\ud800"}'.encode("utf-8", "surrogatepass"), 400, "invalid_body"),
        (b"not json", 400, "invalid_json"),
        (b"[1, 2]", 400, "invalid_json"),
        (b'"a string"', 400, "invalid_json"),
        (NESTED, 400, "invalid_json"),
        (b'{"n": ' + b"9" * 5000 + b"}", 400, "invalid_json"),
        (json.dumps({"deep": deep}).encode(), 422, "too_deeply_nested"),
        (b'{"n": 1e999}', 422, "invalid_number"),
        (b'{"n": NaN}', 422, "invalid_number"),
        (json.dumps({"n": 2**70}).encode(), 422, "invalid_number"),
        (with_(event_id="Ev\u0000"), 422, "nul_character"),
        (with_(team_id="T\ud800"), 422, "invalid_unicode"),
        (with_(event_id="E" * 65), 422, "invalid_slack_event"),
        (with_(event="not an object"), 422, "invalid_slack_event"),
        (with_event(ts=1700000000.5), 422, "invalid_slack_event"),
        (with_event(user=["U1"]), 422, "invalid_slack_event"),
        (with_event(channel="C" * 40), 422, "invalid_slack_event"),
        (with_event(text=5), 422, "invalid_slack_event"),
        (with_event(message=[1]), 422, "invalid_slack_event"),
        (with_event(user="U\u0000"), 422, "nul_character"),
    ]
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        with caplog.at_level(logging.INFO):
            for body, status, code in cases:
                got, answer = await _send(gw, body, _signed(fake_slack, body))
                assert (got, _our_shape(answer)[0]) == (status, code), (body[:80], answer)
        _no_traceback(caplog)
        await _nothing_stored(gw)


async def test_a_message_holding_a_lone_surrogate_or_a_nul_is_refused_politely_once(
    tmp_path: Path, database_url: str, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    async with slack_gateway(tmp_path, fake_slack, database_url=database_url) as gw:
        with caplog.at_level(logging.INFO):
            for text, why in (("bad \ud800 text", "lone surrogate"), ("nul \x00 here", "NUL")):
                payload = fake_slack.user_message(ALICE, text)
                body = json.dumps(payload).encode()  # escaped: \ud800, \u0000
                for _ in range(2):  # Slack's retry of the same event says nothing again
                    status, answer = await _send(gw, body, _signed(fake_slack, body))
                    assert status == 200, answer
                [told] = [c for c in fake_slack.calls("chat.postMessage") if why in c.args["text"]]
                assert told.args["text"].startswith("That was not recorded: your message holds")
            await _nothing_stored(gw)

            status, _ = await gw.post_event(fake_slack.user_message(ALICE, "and now?"))
            assert status == 200

            async def answered() -> bool:
                return any(
                    c.args["text"] == "and now?" for c in fake_slack.calls("chat.postMessage")
                )

            await eventually(answered)
        _no_traceback(caplog)
    assert len(fake_slack.calls("chat.postMessage")) == 3


async def test_what_bolt_answers_on_its_own_is_in_our_shape(
    tmp_path: Path, fake_slack: FakeSlack
) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        for payload in (
            {"type": "block_actions", "actions": [], "team": {"id": "T1"}},  # not for this URL
            {"type": "event_callback", "event": {}},  # no event type: nothing handles it
        ):
            body = json.dumps(payload).encode()
            status, answer = await _send(gw, body, _signed(fake_slack, body))
            assert 400 <= status < 500, answer
            _our_shape(answer)
