"""`gateway.span_metrics`: which ended spans feed which histogram, with what duration."""

from __future__ import annotations

from gateway.metrics import Metrics
from gateway.span_metrics import SpanMetrics
from tests.spans import Recorded

SECOND = 1_000_000_000


def test_turns_and_each_channel_s_deliveries_are_observed_with_their_span_s_duration() -> None:
    metrics = Metrics()
    histograms = SpanMetrics(metrics.span_histograms())
    spans = Recorded()
    spans.provider.add_span_processor(histograms)
    tracer = spans.provider.get_tracer("test")
    try:
        made = [
            ("rolecall.turn", {"rolecall.role": "echo"}, 3),
            ("rolecall.slack.post", {}, 2),
            ("rolecall.webhook.deliver", {}, 1),
            ("rolecall.widget.stream", {}, 1),
            ("rolecall.widget.stream", {}, 1),
            ("rolecall.attempt", {}, 1),  # neither a turn nor a delivery
        ]
        for name, attributes, seconds in made:
            tracer.start_span(name, attributes=attributes, start_time=SECOND).end(
                end_time=SECOND * (1 + seconds)
            )
        histograms.close()
        tracer.start_span("rolecall.turn", attributes={"rolecall.role": "echo"}).end()
    finally:
        spans.close()

    def observed(name: str, **labels: str) -> tuple[float | None, float | None]:
        registry = metrics.registry
        return (
            registry.get_sample_value(f"{name}_count", labels),
            registry.get_sample_value(f"{name}_sum", labels),
        )

    assert observed("rolecall_turn_seconds", role="echo") == (1, 3)
    assert observed("rolecall_delivery_seconds", channel="slack") == (1, 2)
    assert observed("rolecall_delivery_seconds", channel="webhook") == (1, 1)
    assert observed("rolecall_delivery_seconds", channel="widget") == (2, 2)


def test_the_histograms_are_registered_once() -> None:
    metrics = Metrics()
    assert metrics.span_histograms() is metrics.span_histograms()
