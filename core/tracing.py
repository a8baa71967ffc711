"""Traces: one OpenTelemetry trace per inbound message, across the hops that are not calls.

Core and the channels make spans through this module only, over `opentelemetry-api`; the
gateway installs the SDK's provider (`enable`) when tracing is on (`gateway.tracing`). Off —
the default — every helper here returns at its first test (`on()`), so tracing costs a branch.

A message's path is calls until it is committed, and after that it is not: the writer commits it
in a batch of its own task, the commit only nudges the run host and the channels' delivery
workers, which read what is new from the database in tasks of their own. So the trace context
is carried beside the data, in this process's memory:

- **The commit.** `Writer.run` wraps a command sent from inside a trace in a `rolecall.commit`
  span (a command sent from outside any trace — a cursor moved, a heartbeat — makes none). Once
  the batch has committed, each event the command appended is remembered with that span's
  context (`remember`, `origin_of`): a bounded map from event id to span context, `KEPT`
  entries, the oldest forgotten first.
- **The write batch** serves many requests: its `rolecall.write_batch` span starts a trace of
  its own and links to the commit span of every command in it (and each of those links back to
  it), rather than pretend to be the child of one.
- **The nudge.** The run host, told of a committed message, makes a `rolecall.nudge` span, a
  child of the message's commit, and keeps its context with the run until a turn takes it
  (`Waiting`): the turn is the child of the first nudge it answers and links to the others.
- **The deliveries** (`delivery`) of a committed event — a Slack post, a widget stream's frame,
  a webhook — are children of the commit that appended the event.
- **Tool calls** an agent makes over HTTP or MCP arrive as requests of their own: their
  `rolecall.tool_call` span is the child of the run's running attempt (`attempt`), when it runs
  in this process, and links to the request's span.

What the map does not hold — an event committed by another replica, or before a restart, or
forgotten — starts a new trace where it is next handled (a turn, a Slack post, a webhook), with
the ids of the run, the thread and the event as attributes: across replicas, traces are joined
by those ids, not by a parent. Trace ids are not stored with events; a turn's transcript keeps
the trace id of the turn (`current_trace_id`), and so does every log line written inside a
trace (`gateway.logs`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Tracer,
    TracerProvider,
)
from opentelemetry.util.types import AttributeValue

__all__ = [
    "KEPT",
    "Waiting",
    "attempt",
    "commit_span",
    "committed",
    "current_trace_id",
    "delivery",
    "disable",
    "enable",
    "nudge",
    "on",
    "origin_of",
    "span",
    "start",
    "tool_call",
    "turn",
    "write_batch",
]

NAME = "rolecall"
"""The instrumentation scope of every span made here."""
KEPT = 10_000
"""Committed events whose trace context is remembered (the newest)."""
LINKS = 32
"""Links a span takes at most (a write batch's requests, a turn's later nudges)."""

Attributes = Mapping[str, AttributeValue]

_tracer: Tracer | None = None
_origins: dict[str, SpanContext] = {}
"""The commit span of each event committed lately, oldest first."""
_attempts: dict[str, SpanContext] = {}
"""The running attempt of each run whose turn runs here."""
_ROOT = Context()
_OFF: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)
"""What a span's block runs in when no span is made: nothing to enter or leave."""


def enable(provider: TracerProvider) -> None:
    """Make spans from now on, with `provider` (the gateway's, or a test's)."""
    global _tracer
    _tracer = provider.get_tracer(NAME)


def disable() -> None:
    """Make no span from now on, and forget every context kept."""
    global _tracer
    _tracer = None
    _origins.clear()
    _attempts.clear()


def on() -> bool:
    return _tracer is not None


def tracer() -> Tracer | None:
    """The tracer when tracing is on (the gateway's request spans use it too)."""
    return _tracer


# --- reading contexts -------------------------------------------------------------------------


def _current() -> SpanContext | None:
    context = trace.get_current_span().get_span_context()
    return context if context.is_valid else None


def trace_id(context: SpanContext | None) -> str | None:
    """The trace id in hex — only of a sampled span: one the backend will have."""
    if context is None or not context.is_valid or not context.trace_flags.sampled:
        return None
    return trace.format_trace_id(context.trace_id)


def current_trace_id() -> str | None:
    """The trace id of the span in hand, if sampled (for log lines and transcripts)."""
    return trace_id(trace.get_current_span().get_span_context())


def _parented(parent: SpanContext | None, root: bool) -> Context | None:
    if parent is not None:
        return trace.set_span_in_context(NonRecordingSpan(parent))
    return _ROOT if root else None


def _dropped(parent: SpanContext | None, root: bool) -> SpanContext | None:
    """The parent a span would have, when it is a trace the sampler did not keep (None: any
    other case). Its children are not made: the span in hand, or that parent made current, is
    all they would be — as a parent-based sampler (the default) decides, at a fraction of the
    SDK's cost for a span it then drops."""
    if root:
        return None
    context = parent if parent is not None else trace.get_current_span().get_span_context()
    return context if context.is_valid and not context.trace_flags.sampled else None


def _carried(context: SpanContext) -> AbstractContextManager[Span]:
    """A dropped trace's context, made current for the block."""
    return trace.use_span(NonRecordingSpan(context))


# --- making spans -----------------------------------------------------------------------------


def span(
    name: str,
    *,
    parent: SpanContext | None = None,
    root: bool = False,
    links: Sequence[SpanContext] = (),
    attributes: Attributes | None = None,
    start_time: int | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> AbstractContextManager[Span]:
    """A span, current while the block runs: the child of `parent` when given, else of the span
    in hand (`root`: of none). An exception out of the block is recorded on it. In a trace that
    is not sampled, no span: the parent's context goes on."""
    if _tracer is None:
        return _OFF
    if (dropped := _dropped(parent, root)) is not None:
        return _carried(dropped)
    return _tracer.start_as_current_span(
        name,
        context=_parented(parent, root),
        kind=kind,
        attributes=attributes,
        links=[Link(c) for c in links[:LINKS]],
        start_time=start_time,
    )


def start(
    name: str,
    *,
    parent: SpanContext | None = None,
    root: bool = False,
    links: Sequence[SpanContext] = (),
    attributes: Attributes | None = None,
    start_time: int | None = None,
) -> Span:
    """A span the caller ends (`end()`), never current; the no-op span when tracing is off (and
    the parent's context, not sampled, in a trace that is not)."""
    if _tracer is None:
        return INVALID_SPAN
    if (dropped := _dropped(parent, root)) is not None:
        return NonRecordingSpan(dropped)
    return _tracer.start_span(
        name,
        context=_parented(parent, root),
        attributes=attributes,
        links=[Link(c) for c in links[:LINKS]],
        start_time=start_time,
    )


def event(name: str, **attributes: AttributeValue) -> None:
    """Something that happened within the span in hand (nothing outside a trace)."""
    trace.get_current_span().add_event(name, attributes)


# --- the writer -------------------------------------------------------------------------------


_UNTRACED: AbstractContextManager[None] = nullcontext(None)


def commit_span(command: object) -> AbstractContextManager[Span | None]:
    """`rolecall.commit` for a command sent to the writer from inside a trace (None outside
    one, and when tracing is off): from the command's queueing to its answer."""
    if _tracer is None:
        return _UNTRACED
    here = trace.get_current_span()
    context = here.get_span_context()
    if not context.is_valid:
        return _UNTRACED
    if not context.trace_flags.sampled:
        return nullcontext(here)  # (its context is what the command's events remember)
    return _tracer.start_as_current_span(
        "rolecall.commit", attributes={"rolecall.command": type(command).__name__}
    )


def write_batch(commits: Sequence[Span], *, size: int) -> Span:
    """`rolecall.write_batch`, a trace of its own linked to the commit span of each traced
    command of the batch (`size` commands in all); each of them links back to it."""
    contexts = [c.get_span_context() for c in commits]
    batch = start(
        "rolecall.write_batch",
        root=True,
        links=contexts,
        attributes={"rolecall.batch.commands": size, "rolecall.batch.traced": len(contexts)},
    )
    linked = batch.get_span_context()
    for commit in commits:
        commit.add_link(linked)
        commit.set_attribute("rolecall.batch.commands", size)
    return batch


def committed(
    commits: Sequence[Span | None],
    shares: Sequence[tuple[int, int]],
    events: Sequence[Any],
    task_events: Sequence[Any],
) -> None:
    """The batch committed: remember each event with the commit span of the command that
    appended it. `shares`: per command, in order, how many of `events` and of `task_events`
    (each in command order) it appended."""
    at_event = at_task = 0
    for commit, (appended, tasks) in zip(commits, shares, strict=True):
        if commit is not None and (appended or tasks):
            context = commit.get_span_context()
            for event in events[at_event : at_event + appended]:
                remember(event.id, context)
            for event in task_events[at_task : at_task + tasks]:
                remember(event.id, context)
            commit.set_attribute("rolecall.events", appended + tasks)
        at_event += appended
        at_task += tasks


def remember(event_id: str, context: SpanContext) -> None:
    _origins[event_id] = context
    if len(_origins) > KEPT:
        del _origins[next(iter(_origins))]


def origin_of(event_id: str) -> SpanContext | None:
    """The commit span of a committed event, if this process committed it lately."""
    return _origins.get(event_id)


# --- the run host -----------------------------------------------------------------------------


@dataclass(slots=True)
class Waiting:
    """What nudged a run since its last turn began: the nudge spans, and when the first came
    (ns since the epoch; 0: none with a trace)."""

    nudges: list[SpanContext] = field(default_factory=list)
    since: int = 0

    def take(self) -> Waiting:
        """What is waiting, handed to the turn about to begin; this starts afresh."""
        taken = Waiting(self.nudges, self.since)
        self.nudges, self.since = [], 0
        return taken


def nudge(waiting: Waiting, event_id: str, **attributes: AttributeValue) -> None:
    """A committed event nudged a run: a `rolecall.nudge` span, the child of the event's commit,
    kept in `waiting` for the run's next turn. Nothing when the event's commit is not known."""
    if _tracer is None or (origin := origin_of(event_id)) is None:
        return
    made = start(
        "rolecall.nudge", parent=origin, attributes={"rolecall.event_id": event_id, **attributes}
    )
    made.end()
    if not waiting.nudges:
        waiting.since = time.time_ns()
    if len(waiting.nudges) < LINKS:
        waiting.nudges.append(made.get_span_context())


def turn(waiting: Waiting | None, **attributes: AttributeValue) -> AbstractContextManager[Span]:
    """`rolecall.turn`: the child of the first nudge it answers, linked to the others, from that
    nudge on; with `rolecall.turn.queue_wait` from the nudge to now. A turn no traced nudge
    woke starts a trace of its own."""
    return _OFF if _tracer is None else _turn(waiting, attributes)


@contextmanager
def _turn(waiting: Waiting | None, attributes: Attributes) -> Iterator[Span]:
    nudges = waiting.nudges if waiting is not None else []
    since = waiting.since if waiting is not None and nudges else None
    with span(
        "rolecall.turn",
        parent=nudges[0] if nudges else None,
        root=not nudges,
        links=nudges[1:],
        attributes=attributes,
        start_time=since,
    ) as made:
        if since is not None:
            start("rolecall.turn.queue_wait", start_time=since).end()
        yield made


def attempt(run_id: str, number: int) -> AbstractContextManager[Span]:
    """`rolecall.attempt`, known while it runs as the run's (for the tool calls its agent makes
    over HTTP or MCP)."""
    return _OFF if _tracer is None else _attempt(run_id, number)


@contextmanager
def _attempt(run_id: str, number: int) -> Iterator[Span]:
    with span("rolecall.attempt", attributes={"rolecall.attempt": number}) as made:
        _attempts[run_id] = made.get_span_context()
        try:
            yield made
        finally:
            if _attempts.get(run_id) == made.get_span_context():
                del _attempts[run_id]


def tool_call(run_id: str, name: str) -> AbstractContextManager[Span]:
    """`rolecall.tool_call` with the tool's name and outcome (`ok`, or `error` and its code):
    the child of the run's running attempt when the call came from elsewhere (a request over
    HTTP or MCP, linked), else of the span in hand."""
    return _OFF if _tracer is None else _tool_call(run_id, name)


@contextmanager
def _tool_call(run_id: str, name: str) -> Iterator[Span]:
    running = _attempts.get(run_id)
    here = _current()
    elsewhere = running is not None and (here is None or here.trace_id != running.trace_id)
    with span(
        "rolecall.tool_call",
        parent=running if elsewhere else None,
        links=[here] if elsewhere and here is not None else (),
        attributes={"rolecall.tool.name": name, "rolecall.run_id": run_id},
    ) as made:
        try:
            yield made
        except Exception as error:
            made.set_attribute("rolecall.tool.outcome", "error")
            made.set_attribute("rolecall.error.code", str(getattr(error, "code", "")) or "raised")
            raise
        made.set_attribute("rolecall.tool.outcome", "ok")


# --- the channels -----------------------------------------------------------------------------


def delivery(
    name: str, event_id: str, *, alone: bool = True, attributes: Attributes | None = None
) -> AbstractContextManager[Span]:
    """A channel's delivery of a committed event: the child of the event's commit. One whose
    commit is not known (another replica's, one before a restart) starts a trace of its own —
    unless `alone` is false (a widget catching up on history is no news)."""
    origin = origin_of(event_id) if _tracer is not None else None
    if _tracer is None or (origin is None and not alone):
        return _OFF
    return span(
        name,
        parent=origin,
        root=origin is None,
        attributes={"rolecall.event_id": event_id, **(attributes or {})},
    )
