"""Traces in tests: the OpenTelemetry SDK with an in-memory exporter, and reading what it holds.

`Recorded` is a tracer provider whose every span is kept, once ended, in memory (the SDK's
`InMemorySpanExporter` behind a `SimpleSpanProcessor`: nothing goes over the network). A test
hands `recorded.provider` to `build_app(tracer_provider=…)` and reads the spans back: by name,
by trace, each one's parent and links, the chain of parents up to a trace's root.

Two fixtures, for every suite (tests/conftest.py): `recorded`, a `Recorded` for the test's
length, and `core_spans`, which turns core's spans (`core.tracing`) on with `recorded.provider`
for a test with no gateway to do it — a gateway given the provider turns them on and off itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler
from opentelemetry.trace import format_trace_id

from core import tracing


class Recorded:
    def __init__(self, *, sampler: Sampler | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(sampler=sampler)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> Sequence[ReadableSpan]:
        """Every span ended so far, in the order they ended."""
        return self.exporter.get_finished_spans()

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str, **attributes: object) -> ReadableSpan:
        """The one span of that name with those attributes (fails when there is not one)."""
        found = [
            span
            for span in self.named(name)
            if all((span.attributes or {}).get(k) == v for k, v in attributes.items())
        ]
        assert len(found) == 1, (name, attributes, [s.attributes for s in self.named(name)])
        return found[0]

    def of_trace(self, trace_id: int) -> list[ReadableSpan]:
        return [span for span in self.spans if span.context.trace_id == trace_id]

    def by_id(self, span_id: int) -> ReadableSpan | None:
        return next((s for s in self.spans if s.context.span_id == span_id), None)

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        """The span's parent, if it is among the spans recorded."""
        return self.by_id(span.parent.span_id) if span.parent is not None else None

    def children(self, span: ReadableSpan, name: str | None = None) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans
            if s.parent is not None
            and s.parent.span_id == span.context.span_id
            and (name is None or s.name == name)
        ]

    def chain(self, span: ReadableSpan) -> list[str]:
        """The names of the span's ancestors, from its parent up to the trace's root."""
        names = []
        at = self.parent(span)
        while at is not None:
            names.append(at.name)
            at = self.parent(at)
        return names

    def linked(self, span: ReadableSpan) -> list[ReadableSpan]:
        """The recorded spans `span` links to."""
        found = (self.by_id(link.context.span_id) for link in span.links)
        return [s for s in found if s is not None]

    def close(self) -> None:
        self.provider.shutdown()


def hex_id(span: ReadableSpan) -> str:
    """The span's trace id as the transcript and log lines write it."""
    return format_trace_id(span.context.trace_id)


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    """Spans kept in memory for the test's length."""
    spans = Recorded()
    yield spans
    spans.close()


@pytest.fixture
def core_spans(recorded: Recorded) -> Iterator[None]:
    """Core's spans made with `recorded.provider`, for the test's length."""
    tracing.enable(recorded.provider)
    try:
        yield
    finally:
        tracing.disable()
