"""`rolecall serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` set exports its traces over OTLP/HTTP, as a
collector receives them (`bench/collector.py`, on loopback): a message and its echo reach it as
one trace of the service `rolecall` once the gateway stops (what is queued is flushed), the
turn's transcript and the request's access line carry that trace's id; an `OTEL_*` variable it
cannot export with stops `serve` in one line."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from bench.collector import Collector
from tests.cli.conftest import Gateway, Result
from tests.waiting import eventually

TOKEN = "traces-tests-operator-token-0123456789"
TRACED = {
    "POST /api/v1/threads/{id}/messages",
    "rolecall.commit",
    "rolecall.nudge",
    "rolecall.turn",
    "rolecall.turn.queue_wait",
    "rolecall.attempt",
    "rolecall.session.wake",
    "rolecall.agent",
}


def _call(gateway: Gateway, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        gateway.url + path,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


async def test_serve_exports_a_message_and_its_echo_as_one_trace(
    tmp_path: Path,
    serve: Callable[..., AbstractContextManager[Gateway]],
    echo_roles_dir: Path,
) -> None:
    with (
        Collector.running(keep=True) as collector,
        serve(
            tmp_path / "var",
            ROLECALL_ROLES_DIR=str(echo_roles_dir),
            ROLECALL_API_TOKEN=TOKEN,
            ROLECALL_LOG_FORMAT="json",
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        ) as gateway,
    ):
        thread = _call(gateway, "/api/v1/threads", {"participants": ["person:ann", "role:echo"]})
        _call(
            gateway,
            f"/api/v1/threads/{thread['id']}/messages",
            {"author": "person:ann", "text": "hi"},
        )

        def turns() -> list[dict[str, Any]]:
            runs = _call(gateway, f"/api/v1/runs?thread={thread['id']}")["runs"]
            return _call(gateway, f"/api/v1/runs/{runs[0]['id']}/turns")["turns"] if runs else []

        [turn] = await eventually(turns, what="the echo's turn recorded")
        assert gateway.interrupt() == 0

    trace_id = turn["trace_id"]
    assert isinstance(trace_id, str) and len(trace_id) == 32
    traced = [span for span in collector.kept if span.trace_id == trace_id]
    assert {span.name for span in traced} >= TRACED
    assert {span.resource["service.name"] for span in collector.kept} == {"rolecall"}
    assert all(span.resource["service.instance.id"] for span in collector.kept)
    lines = [json.loads(line) for line in gateway.stderr.splitlines() if line.startswith("{")]
    [access] = [
        line
        for line in lines
        if line["logger"] == "rolecall.access" and line.get("path", "").endswith("/messages")
    ]
    assert access["trace_id"] == trace_id


def test_an_exporter_serve_cannot_use_stops_it_in_one_line(
    tmp_path: Path,
    rolecall: Callable[..., Result],
    environment: Callable[..., dict[str, str]],
) -> None:
    env = environment(ROLECALL_VAR_DIR=str(tmp_path), ROLECALL_TRACES="true")
    failed = rolecall("serve", env={**env, "OTEL_TRACES_EXPORTER": "zipkin"})
    assert failed.returncode == 2
    assert failed.error_line.startswith("rolecall: OTEL_TRACES_EXPORTER: 'zipkin' is not one of")
    grpc = {**env, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    failed = rolecall("serve", env=grpc)
    assert failed.returncode == 2
    assert failed.error_line == (
        "rolecall: OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf is supported (got 'grpc')"
    )
