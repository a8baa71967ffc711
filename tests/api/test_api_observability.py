"""Health, Prometheus metrics and structured request logs, over real HTTP."""

from __future__ import annotations

import json
import logging
import re

import pytest

from gateway.app import build_app
from gateway.logs import JsonFormatter, RequestIdFilter, current_request_id
from gateway.metrics import METRICS_KEY
from gateway.settings import Settings
from tests.api.conftest import Api

ALICE, SUPPORT = "person:alice", "role:support"


def sample(metrics_text: str, name: str, **labels: str) -> float | None:
    """The value of one series in the Prometheus text, or None when it is absent."""
    for line in metrics_text.splitlines():
        series, _, value = line.rpartition(" ")
        if not series.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', series))
        if found == labels:
            return float(value)
    return None


async def test_healthz_says_ok_once_the_database_answers(api: Api) -> None:
    reply = await api.get("/healthz", token=None)

    assert reply.status == 200
    assert reply.body == {"status": "ok"}


async def test_metrics_count_requests_by_route_template_never_the_raw_path(api: Api) -> None:
    thread = await api.thread(ALICE, SUPPORT)
    await api.say(thread["id"], ALICE, "one")
    await api.say(thread["id"], ALICE, "two")
    await api.get("/nope")
    await api.get(f"/api/v1/threads/{thread['id']}", token="wrong-token-wrong-token")

    reply = await api.get("/metrics", token=None)

    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/plain")
    text = reply.text
    messages = "/api/v1/threads/{id}/messages"
    total = "rolecall_http_requests_total"
    assert sample(text, total, method="POST", route=messages, status="201") == 2
    assert sample(text, total, method="POST", route="/api/v1/threads", status="201") == 1
    assert sample(text, total, method="GET", route="unmatched", status="404") == 1
    assert sample(text, total, method="GET", route="/api/v1/threads/{id}", status="401") == 1
    duration = "rolecall_http_request_duration_seconds_count"
    assert sample(text, duration, method="POST", route=messages) == 2
    assert thread["id"] not in text


async def test_metrics_count_events_appended_by_kind_from_zero(api: Api) -> None:
    before = (await api.get("/metrics")).text
    thread = await api.thread(ALICE, SUPPORT)
    message = await api.say(thread["id"], SUPPORT, "hi")
    await api.say(thread["id"], ALICE, "hello")
    await api.set_state(thread["id"], ALICE, "removed")
    await api.post(
        f"/api/v1/threads/{thread['id']}/messages/{message['id']}/retract", {"author": SUPPORT}
    )

    after = (await api.get("/metrics")).text

    appended = "rolecall_events_appended_total"
    kinds = ["message", "participant_state_changed", "retraction", "system"]
    assert [sample(before, appended, kind=kind) for kind in kinds] == [0, 0, 0, 0]
    assert [sample(after, appended, kind=kind) for kind in kinds] == [2, 1, 1, 0]


def test_every_app_counts_on_a_registry_of_its_own(settings: Settings) -> None:
    first = build_app(settings, api_token="a-token-of-sixteen-chars")
    second = build_app(settings, api_token="a-token-of-sixteen-chars")

    first[METRICS_KEY].observe("GET", "/healthz", 200, 0.001)

    assert first[METRICS_KEY].registry is not second[METRICS_KEY].registry
    text = second[METRICS_KEY].exposition().decode()
    assert (
        sample(text, "rolecall_http_requests_total", method="GET", route="/healthz", status="200")
        is None
    )


async def test_each_request_writes_one_access_line_with_its_fields_and_request_id(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rolecall.access")
    thread = await api.thread(ALICE, SUPPORT)

    reply = await api.get(f"/api/v1/threads/{thread['id']}/timeline?as={ALICE}")

    [line] = [
        json.loads(JsonFormatter().format(record))
        for record in caplog.records
        if record.name == "rolecall.access" and "timeline" in record.getMessage()
    ]
    assert line["method"] == "GET"
    assert line["path"] == f"/api/v1/threads/{thread['id']}/timeline"  # never the query
    assert line["status"] == 200
    assert line["remote"] == "127.0.0.1"
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["request_id"] == reply.headers["X-Request-Id"]
    assert (line["level"], line["logger"]) == ("info", "rolecall.access")


async def test_a_well_formed_request_id_is_kept_and_a_malformed_one_replaced(api: Api) -> None:
    kept = await api.get("/healthz", headers={"X-Request-Id": "trace-42.a_b"})
    replaced = await api.get("/healthz", headers={"X-Request-Id": "bad id\u00e9" + "x" * 80})
    made_up = await api.get("/healthz")

    assert kept.headers["X-Request-Id"] == "trace-42.a_b"
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]+", replaced.headers["X-Request-Id"])
    assert made_up.headers["X-Request-Id"] != replaced.headers["X-Request-Id"]


async def test_no_log_line_ever_contains_the_token_right_or_wrong(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "a-wrong-token-that-must-not-leak"
    await api.thread(ALICE, SUPPORT)
    await api.get("/api/v1/threads?participant=person:alice", token=wrong)
    await api.get("/nope")
    await api.post("/api/v1/threads", {"participants": ["x"]})

    formatter = JsonFormatter()
    lines = [formatter.format(record) for record in caplog.records]

    assert any(json.loads(line)["logger"] == "rolecall.access" for line in lines)
    assert not [line for line in lines if api.token in line or wrong in line]


def test_json_log_lines_carry_the_current_request_id_and_the_traceback() -> None:
    record = logging.LogRecord("rolecall.gateway", logging.ERROR, __file__, 1, "boom", (), None)
    try:
        raise ValueError("inner detail")
    except ValueError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    token = current_request_id.set("req-7")
    try:
        RequestIdFilter().filter(record)
    finally:
        current_request_id.reset(token)

    line = json.loads(JsonFormatter().format(record))

    assert (line["message"], line["level"], line["request_id"]) == ("boom", "error", "req-7")
    assert "ValueError: inner detail" in line["traceback"]
    assert line["at"].endswith("Z")
