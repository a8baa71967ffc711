"""Traces out of the gateway: the OpenTelemetry SDK set up at start-up, and a span per request.

**On or off** (`wanted`): off unless `ROLECALL_TRACES` is true or `OTEL_EXPORTER_OTLP_ENDPOINT`
(or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; never when `OTEL_SDK_DISABLED` is true. Off,
nothing of the SDK is loaded and core makes no span (`core.tracing`).

**The provider** (`provider_from_environment`), built at start-up: the service `rolecall` unless
`OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names another, this replica's id as
`service.instance.id`; the sampler `OTEL_TRACES_SAMPLER` names (every trace by default); a
`BatchSpanProcessor` (its `OTEL_BSP_*` variables) handing spans to the exporter
`OTEL_TRACES_EXPORTER` names: `otlp` (the default: OTLP over HTTP with protobuf, to
`OTEL_EXPORTER_OTLP_ENDPOINT`, `http://localhost:4318` by default, with the exporter's headers,
timeout and compression variables), `console` (each span on stdout), or `none` (spans made —
the trace ids in logs and transcripts — but sent nowhere). A protocol other than
`http/protobuf`, or an exporter of another name, stops start-up with one line
(`check_environment`). The provider is also installed as the process's global one, unless one
is already (so libraries that make spans of their own, such as the MCP SDK, join the traces).

**The lifecycle** (`lifecycle`): core's spans are enabled before the database opens and,
once everything else has stopped, disabled; then the provider the gateway built is flushed and
shut down. A provider handed to `build_app` (a test's in-memory one) is used as it is and left
to its owner. Either way the provider is given the span processor that turns the turns' and the
deliveries' spans into latency histograms (`gateway.span_metrics`), registered on the app's
metrics only then.

**Requests** (`request_spans`): every request that may write (not GET, HEAD or OPTIONS) is a
server span `{method} {route}` (the route template, never the raw path; a method outside the
standard ones is `_OTHER`, so no client mints span names) that continues the
caller's trace when it sends a W3C `traceparent`, with its status code and request id. It wraps
`request_edge`, so the access line and every line logged while the request is handled carry the
trace id (`gateway.logs`). It is installed only when tracing is on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from core import tracing
from gateway.metrics import KNOWN_METHODS, METRICS_KEY, UNMATCHED_ROUTE
from gateway.settings import Settings, SettingsError

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Attributes, Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

SERVICE_NAME = "rolecall"
UNTRACED_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Reads: they start no trace (their latency is in the metrics)."""
EXPORTERS = frozenset({"otlp", "console", "none"})
REQUEST_ID_HEADER = "X-Request-Id"


def wanted(settings: Settings, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the gateway makes traces: the setting, or an OTLP endpoint in the environment;
    never with `OTEL_SDK_DISABLED=true`."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return settings.traces or bool(endpoint)


def check_environment(environ: Mapping[str, str] = os.environ) -> None:
    """Refuse, in one line naming the variable, what this gateway cannot export with."""
    exporter = _exporter_name(environ)
    if exporter not in EXPORTERS:
        raise SettingsError(
            f"OTEL_TRACES_EXPORTER: {exporter!r} is not one of {', '.join(sorted(EXPORTERS))}"
        )
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(name, "").strip()
        if protocol and protocol != "http/protobuf":
            raise SettingsError(f"{name}: only http/protobuf is supported (got {protocol!r})")


def _exporter_name(environ: Mapping[str, str]) -> str:
    return environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"


def provider_from_environment(
    replica_id: str, environ: Mapping[str, str] = os.environ
) -> SdkTracerProvider:
    """The SDK's provider as the `OTEL_*` variables say (see the module's docstring)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    resource = Resource.create({"service.instance.id": replica_id})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = SdkProvider(resource=_hashed(resource))
    exporter = _exporter_name(environ)
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif exporter == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    return provider


def _hashed(resource: Resource) -> Resource:
    """`resource`, hashed once: the exporter groups every span it encodes by its resource, and
    the SDK's `Resource` hashes by writing its attributes out in JSON each time — a quarter of
    the cost of encoding a span. A resource does not change once made, so neither does its
    hash."""
    from opentelemetry.sdk.resources import Resource

    class Hashed(Resource):
        def __init__(self, attributes: Attributes, schema_url: str | None = None) -> None:
            super().__init__(attributes, schema_url)
            self._hash = super().__hash__()

        def __hash__(self) -> int:
            return self._hash

    return Hashed(resource.attributes, resource.schema_url)


def lifecycle(
    given: TracerProvider | None, replica_id: Callable[[], str]
) -> Callable[[web.Application], AsyncIterator[None]]:
    """The cleanup context that turns core's spans on (with `given`, else a provider built from
    the environment for the replica `replica_id()`) and, at cleanup, off again."""

    async def traces(app: web.Application) -> AsyncIterator[None]:
        from opentelemetry.sdk.trace import TracerProvider as SdkProvider

        from gateway.span_metrics import SpanMetrics

        built: SdkTracerProvider | None = None
        provider: TracerProvider
        if given is None:
            provider = built = provider_from_environment(replica_id())
            if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
                trace.set_tracer_provider(built)
        else:
            provider = given
        histograms = SpanMetrics(app[METRICS_KEY].span_histograms())
        if isinstance(provider, SdkProvider):  # (a provider of another SDK makes no histogram)
            provider.add_span_processor(histograms)
        tracing.enable(provider)
        try:
            yield
        finally:
            tracing.disable()
            histograms.close()
            if built is not None:  # what is still queued goes out (the exporter's timeout)
                await asyncio.to_thread(built.shutdown)

    return traces


def request_spans(on: bool) -> list[Middleware]:
    """The middleware of request spans when tracing is `on` (see the module's docstring)."""
    return [_traced_requests()] if on else []


def _traced_requests() -> Middleware:

    @web.middleware
    async def traced(request: web.Request, handler: Handler) -> web.StreamResponse:
        tracer = tracing.tracer()
        if tracer is None or request.method in UNTRACED_METHODS:
            return await handler(request)
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else UNMATCHED_ROUTE
        method = request.method if request.method in KNOWN_METHODS else "_OTHER"
        caller = propagate.extract(request.headers) if "traceparent" in request.headers else None
        attributes = {
            "http.request.method": method,
            "http.route": route,
            "url.path": request.path,
        }
        made = tracer.start_span(
            f"{method} {route}", context=caller, kind=SpanKind.SERVER, attributes=attributes
        )
        with tracing.current(made) as span:
            response = await handler(request)
            if span.is_recording():
                span.set_attribute("http.response.status_code", response.status)
                if (request_id := response.headers.get(REQUEST_ID_HEADER)) is not None:
                    span.set_attribute("rolecall.request_id", request_id)
                if response.status >= 500:
                    span.set_status(Status(StatusCode.ERROR, f"HTTP {response.status}"))
            return response

    return traced
