"""Prometheus metrics: requests, latencies, events appended; served open at `GET /metrics`.

Each application has its own `CollectorRegistry`, so a process (or a test session) can build many
apps without their series colliding. Labels are kept to bounded sets: a request is labelled by the
route template it matched (`/api/v1/threads/{id}`, never the raw path; `unmatched` when none did)
and by its method (`OTHER` for anything outside the standard methods), so no client can mint series.

Each replica reports the runs it owns, the delivery leases it holds, the runs it found orphaned
and offered for take-over, and how late the other replicas' commit notifications arrive.

Housekeeping counts the rows it deletes, by table (`rolecall_records_pruned_total`).

`events appended` is counted from storage's after-commit callback, by event kind; every kind is
exported from zero so a dashboard sees the series before the first event.

The run host reports through `HostMetrics` (its `HostObserver`): turns started and finished (by
role and outcome — `failed` among them), failed attempts, turn latency, queue wait (from the
nudge to the turn starting), sessions awake and asleep, and turn slots in use. Roles are a
bounded set (the manifests), outcomes too.

With tracing on, the spans of turns and deliveries give two histograms more (`SpanHistograms`,
fed by `gateway.span_metrics`): registered only then, so that a series that is not measured is
absent rather than zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from core.model.timeline import AnyEvent, EventKind

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
        self.host = HostMetrics(self.registry)
        self.pruned = Counter(
            "rolecall_records_pruned",
            "Rows deleted by housekeeping once their time had passed, by table.",
            ["table"],
            registry=self.registry,
        )
        self.replica_runs_owned = Gauge(
            "rolecall_replica_runs_owned",
            "Runs this replica holds the lease of (drives) now.",
            registry=self.registry,
        )
        self.replica_delivery_leases = Gauge(
            "rolecall_replica_delivery_leases",
            "Leases other than runs' this replica held at its last heartbeat: endpoint and "
            "Slack deliveries, housekeeping.",
            registry=self.registry,
        )
        self.replica_takeovers = Counter(
            "rolecall_replica_takeovers",
            "Runs found with a lease that expired while held (their replica died or stalled) "
            "or was handed back (it stopped), and nudged here to be taken over.",
            registry=self.registry,
        )
        self.notify_lag = Histogram(
            "rolecall_notify_lag_seconds",
            "Time from a commit notification being sent (by any replica, this one included) to "
            "its receipt here.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.widget_streams = Gauge(
            "rolecall_widget_streams",
            "Widget event streams (Server-Sent Events) open now.",
            registry=self.registry,
        )
        self._span_histograms: SpanHistograms | None = None

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

    def span_histograms(self) -> SpanHistograms:
        """The histograms spans feed, registered on first use (when tracing is turned on)."""
        if self._span_histograms is None:
            self._span_histograms = SpanHistograms(self.registry)
        return self._span_histograms


TURN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class HostMetrics:
    """The run host's `HostObserver`, as Prometheus series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.started = Counter(
            "rolecall_turns_started", "Turns started, by role.", ["role"], registry=registry
        )
        self.finished = Counter(
            "rolecall_turns_finished",
            "Turns finished, by role and outcome (replied, silent, no_answer, failed, "
            "cancelled, superseded).",
            ["role", "outcome"],
            registry=registry,
        )
        self.failed_attempts = Counter(
            "rolecall_turn_attempts_failed",
            "Attempts at a turn that failed (the runtime raised or timed out), by role.",
            ["role"],
            registry=registry,
        )
        self.duration = Histogram(
            "rolecall_turn_duration_seconds",
            "Time from a turn starting to its end being decided, in seconds, by role.",
            ["role"],
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.waited = Histogram(
            "rolecall_turn_queue_wait_seconds",
            "Time from a run being nudged to its turn starting, in seconds, by role.",
            ["role"],
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.sessions_gauge = Gauge(
            "rolecall_sessions",
            "Agent sessions held awake in this process, and asleep (stored, not held).",
            ["state"],
            registry=registry,
        )
        self.slots = Gauge(
            "rolecall_turn_slots_in_use",
            "Turns running at once in this process.",
            registry=registry,
        )
        self.sessions(awake=0, asleep=0)
        # Label lookups cost more than the updates; roles and outcomes are bounded sets.
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        child = self._children.get((metric, *labels))
        if child is None:
            child = self._children[(metric, *labels)] = metric.labels(*labels)
        return child

    def turn_started(self, role: str) -> None:
        self._child(self.started, role).inc()

    def turn_finished(self, role: str, outcome: str, seconds: float) -> None:
        self._child(self.finished, role, outcome).inc()
        self._child(self.duration, role).observe(seconds)

    def attempt_failed(self, role: str) -> None:
        self._child(self.failed_attempts, role).inc()

    def queue_wait(self, role: str, seconds: float) -> None:
        self._child(self.waited, role).observe(seconds)

    def sessions(self, *, awake: int, asleep: int) -> None:
        self.sessions_gauge.labels(state="awake").set(awake)
        self.sessions_gauge.labels(state="asleep").set(asleep)

    def slots_in_use(self, count: int) -> None:
        self.slots.set(count)


DELIVERY_BUCKETS = (*LATENCY_BUCKETS, 30.0, 60.0, 300.0)
"""A widget's frame takes a millisecond; a webhook that retries, minutes."""
DELIVERY_CHANNELS = ("slack", "widget", "webhook")


class SpanHistograms:
    """Turn and delivery latency, from their spans (`gateway.span_metrics`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.turns = Histogram(
            "rolecall_turn_seconds",
            "Time from the nudge a turn answers to its end committed (its queue wait, its "
            "attempts, the commit of its replies), in seconds, by role: the turns' spans.",
            ["role"],
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.deliveries = Histogram(
            "rolecall_delivery_seconds",
            "Time a channel took to deliver a committed event (a Slack post, a widget stream's "
            "frame, a webhook delivery until the endpoint took it, retries included), in "
            "seconds, by channel: the deliveries' spans.",
            ["channel"],
            buckets=DELIVERY_BUCKETS,
            registry=registry,
        )
        self._roles: dict[str, Any] = {}
        self.channels = {c: self.deliveries.labels(channel=c) for c in DELIVERY_CHANNELS}

    def turn(self, role: str, seconds: float) -> None:
        child = self._roles.get(role)
        if child is None:  # roles are a bounded set: the manifests
            child = self._roles[role] = self.turns.labels(role=role)
        child.observe(seconds)


METRICS_KEY = web.AppKey("metrics", Metrics)


async def serve_metrics(request: web.Request) -> web.Response:
    """`GET /metrics`: the Prometheus text format. Open, like `/healthz`."""
    return web.Response(
        body=request.app[METRICS_KEY].exposition(),
        headers={"Content-Type": CONTENT_TYPE_LATEST},
    )
