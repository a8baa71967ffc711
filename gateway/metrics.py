"""Prometheus metrics: requests, latencies, events appended; served open at `GET /metrics`.

Each application has its own `CollectorRegistry`, so a process (or a test session) can build many
apps without their series colliding. Labels are kept to bounded sets: a request is labelled by the
route template it matched (`/api/v1/threads/{id}`, never the raw path; `unmatched` when none did)
and by its method (`OTHER` for anything outside the standard methods), so no client can mint series.

`events appended` is counted from storage's after-commit callback, by event kind; every kind is
exported from zero so a dashboard sees the series before the first event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from core.timeline import AnyEvent, EventKind

UNMATCHED_ROUTE = "unmatched"
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The gateway's metrics on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "rolecall_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "rolecall_http_request_duration_seconds",
            "Time from the request reaching the application to its response, in seconds.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.events_appended = Counter(
            "rolecall_events_appended",
            "Timeline events committed, by kind.",
            ["kind"],
            registry=self.registry,
        )
        self._appended = {kind: self.events_appended.labels(kind=kind.value) for kind in EventKind}
        # Label lookups cost more than the increments; the series are few, so keep them.
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def count_appended(self, events: Sequence[AnyEvent]) -> None:
        """Storage's `on_appended` callback: called after each commit with what it appended."""
        for event in events:
            self._appended[event.kind].inc()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        series = self._series.get((method, route, status))
        if series is None:
            label = method if method in KNOWN_METHODS else "OTHER"
            series = (
                self.requests.labels(method=label, route=route, status=str(status)),
                self.latency.labels(method=label, route=route),
            )
            if label != "OTHER":  # never let arbitrary methods grow the cache
                self._series[(method, route, status)] = series
        count, latency = series
        count.inc()
        latency.observe(seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


METRICS_KEY = web.AppKey("metrics", Metrics)


def route_template(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else UNMATCHED_ROUTE


async def serve_metrics(request: web.Request) -> web.Response:
    """`GET /metrics`: the Prometheus text format. Open, like `/healthz`."""
    return web.Response(
        body=request.app[METRICS_KEY].exposition(),
        headers={"Content-Type": CONTENT_TYPE_LATEST},
    )
