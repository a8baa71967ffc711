"""Log lines written inside a sampled trace carry its id (`gateway.logs`): a JSON line as
`trace_id`, a text line in brackets after the request id; outside a trace, or in a trace that
was not sampled, they carry none."""

from __future__ import annotations

import json
import logging

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import format_trace_id

from gateway.logs import JsonFormatter, RequestIdFilter, TextFormatter, current_request_id


def _record(message: str = "hello") -> logging.LogRecord:
    record = logging.LogRecord("rolecall.test", logging.INFO, __file__, 1, message, None, None)
    RequestIdFilter().filter(record)
    return record


def test_a_line_inside_a_trace_carries_its_id() -> None:
    tracer = TracerProvider().get_tracer("test")
    token = current_request_id.set("req-1")
    try:
        with tracer.start_as_current_span("request") as span:
            record = _record()
    finally:
        current_request_id.reset(token)
    trace_id = format_trace_id(span.get_span_context().trace_id)
    assert json.loads(JsonFormatter().format(record))["trace_id"] == trace_id
    assert TextFormatter().format(record).endswith(f"hello [req-1 trace {trace_id}]")


def test_a_line_outside_a_sampled_trace_carries_none() -> None:
    outside = _record()
    with TracerProvider(sampler=ALWAYS_OFF).get_tracer("test").start_as_current_span("x"):
        unsampled = _record()
    for record in (outside, unsampled):
        assert "trace_id" not in json.loads(JsonFormatter().format(record))
        assert TextFormatter().format(record).endswith("hello")
