"""Latency histograms from spans: a span processor that observes, as each span ends, how long the
turns and the deliveries took (`gateway.metrics.SpanHistograms`).

- `rolecall.turn` → `rolecall_turn_seconds{role}`: from the first nudge the turn answers (a turn
  no traced nudge woke: from its start) to its end committed.
- `rolecall.slack.post`, `rolecall.widget.stream`, `rolecall.webhook.deliver` →
  `rolecall_delivery_seconds{channel}` (`slack`, `widget`, `webhook`): from the delivery's start
  until the channel took the event.

What is observed is what is made: every turn and delivery of this process when every trace is
kept; with a ratio sampler, the share of them in the traces kept — a fair sample of the
latencies, not their count (`rolecall_turns_finished_total` counts turns); with tracing off,
nothing (the histograms are not even registered). The processor runs where a span ends, on the
event loop: a lookup by name and an observation, nothing more.

An application whose tracer provider was handed to it (a test's) adds this processor to that
provider, which keeps it: `close` at the application's cleanup stops it observing.
"""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from gateway.metrics import SpanHistograms

DELIVERIES = {
    "rolecall.slack.post": "slack",
    "rolecall.widget.stream": "widget",
    "rolecall.webhook.deliver": "webhook",
}
"""The delivery spans, by the channel they are observed under."""


class SpanMetrics(SpanProcessor):
    def __init__(self, histograms: SpanHistograms) -> None:
        self._histograms = histograms
        self._by_name: dict[str, Callable[[ReadableSpan, float], None]] = {
            "rolecall.turn": self._turn,
            **{
                name: _observer(histograms.channels[channel].observe)
                for name, channel in DELIVERIES.items()
            },
        }
        self._closed = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        observe = self._by_name.get(span.name)
        if observe is None or self._closed or span.start_time is None or span.end_time is None:
            return
        observe(span, max(span.end_time - span.start_time, 0) / 1e9)

    def _turn(self, span: ReadableSpan, seconds: float) -> None:
        role = (span.attributes or {}).get("rolecall.role", "")
        self._histograms.turn(str(role), seconds)

    def close(self) -> None:
        """Observe nothing more."""
        self._closed = True

    def shutdown(self) -> None:
        self.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _observer(observe: Callable[[float], None]) -> Callable[[ReadableSpan, float], None]:
    return lambda _span, seconds: observe(seconds)
