"""`core.tracing`'s spans made current without the SDK's context managers: what they must still
do — an exception out of the block recorded on the span, the context in hand given back after
it — and, in a trace the sampler dropped, the same blocks making nothing."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import StatusCode

from core import tracing
from tests.spans import Recorded


@pytest.mark.usefixtures("core_spans")
def test_an_exception_out_of_a_span_is_recorded_and_the_context_given_back(
    recorded: Recorded,
) -> None:
    outside = trace.get_current_span()
    with pytest.raises(ValueError, match="refused"), tracing.span("rolecall.agent"):
        raise ValueError("refused")
    with pytest.raises(KeyError), tracing.attempt("run-1", 1):
        raise KeyError("gone")

    assert trace.get_current_span() is outside
    agent, attempt = recorded.named("rolecall.agent") + recorded.named("rolecall.attempt")
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.status.description == "ValueError: refused"
    assert [e.name for e in agent.events] == ["exception"]
    assert attempt.status.status_code is StatusCode.ERROR
    with tracing.tool_call("run-1", "store"):  # no attempt of the run is running any more
        pass
    assert recorded.one("rolecall.tool_call").parent is None


def test_in_a_dropped_trace_the_blocks_make_nothing_and_give_the_context_back() -> None:
    spans = Recorded(sampler=ParentBased(ALWAYS_OFF))
    tracing.enable(spans.provider)
    try:
        with spans.provider.get_tracer("test").start_as_current_span("request") as request:
            dropped = request.get_span_context()
            with tracing.attempt("run-1", 1) as attempt, tracing.span("rolecall.agent") as agent:
                assert attempt.get_span_context() == agent.get_span_context() == dropped
                assert not agent.is_recording()
                with tracing.tool_call("run-1", "store") as call:
                    assert call.get_span_context() == dropped
            assert trace.get_current_span() is request
            assert not tracing.start("rolecall.agent.stream").is_recording()
        assert spans.spans == ()
    finally:
        tracing.disable()
        spans.close()
