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
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
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
    "current",
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
_origins: OrderedDict[str, SpanContext] = OrderedDict()
"""The commit span of each event committed lately, oldest first. (Ordered, for the oldest's
removal: a plain dict's first item is found by walking past every one removed before it.)"""
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


def _in_dropped_trace() -> Span | None:
    """The span in hand when it is of a trace the sampler did not keep — a span nothing is
    recorded on or ended by its holder — and None in any other case."""
    here = trace.get_current_span()
    context = here.get_span_context()
    if not context.is_valid or context.trace_flags.sampled:
        return None
    return here if not here.is_recording() else NonRecordingSpan(context)


def _links(contexts: Sequence[SpanContext]) -> Sequence[Link]:
    return [Link(c) for c in contexts[:LINKS]] if contexts else ()


class _Current(AbstractContextManager[Span]):
    """`made` current while the block runs and ended after it, an exception out of the block
    recorded on it — what the SDK's `start_as_current_span` does, in one object rather than two
    generators and their frames: every span of a round trip is made this way."""

    __slots__ = ("_token", "made")

    def __init__(self, made: Span) -> None:
        self.made = made

    def __enter__(self) -> Span:
        self._token = otel_context.attach(trace.set_span_in_context(self.made))
        return self.made

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: object
    ) -> None:
        otel_context.detach(self._token)
        if isinstance(error, Exception) and self.made.is_recording():
            self.made.record_exception(error)
            self.made.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        self.made.end()


def current(made: Span) -> AbstractContextManager[Span]:
    """`made` (a span the caller started, or a span not sampled) current for the block, and
    ended after it."""
    return _Current(made)


def _carried(context: SpanContext) -> _Current:
    """A dropped trace's context, made current for the block (its span is nothing to end)."""
    return _Current(NonRecordingSpan(context))


def _start(
    name: str,
    parent: SpanContext | None,
    root: bool,
    links: Sequence[SpanContext],
    attributes: Attributes | None,
    start_time: int | None,
    kind: SpanKind,
) -> Span | SpanContext:
    """The span made — or, when `parent` is of a trace the sampler did not keep, its context,
    and no span: the child of a span not sampled is not sampled either (as the parent-based
    samplers decide), and deciding so here costs a fraction of the SDK's making a span to drop
    it. (Its callers look for the span in hand of such a trace first: `_in_dropped_trace`.)"""
    assert _tracer is not None
    if root:
        context: Context | None = _ROOT
    elif parent is not None:
        if parent.is_valid and not parent.trace_flags.sampled:
            return parent
        context = trace.set_span_in_context(NonRecordingSpan(parent))
    else:
        context = None
    return _tracer.start_span(
        name,
        context=context,
        kind=kind,
        attributes=attributes,
        links=_links(links),
        start_time=start_time,
    )


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
    if parent is None and not root and (here := _in_dropped_trace()) is not None:
        return nullcontext(here)  # current already: nothing to make, switch or end
    return _made(_start(name, parent, root, links, attributes, start_time, kind))


def _made(made: Span | SpanContext) -> _Current:
    """What `_start` gave, current for a block."""
    if isinstance(made, SpanContext):
        return _carried(made)
    return _Current(made)


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
    if parent is None and not root and (here := _in_dropped_trace()) is not None:
        return here
    made = _start(name, parent, root, links, attributes, start_time, SpanKind.INTERNAL)
    return NonRecordingSpan(made) if isinstance(made, SpanContext) else made


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
    return _Current(
        _tracer.start_span(
            "rolecall.commit", attributes={"rolecall.command": type(command).__name__}
        )
    )


def write_batch(commits: Sequence[Span], *, size: int) -> Span:
    """`rolecall.write_batch`, a trace of its own linked to the commit span of each command of
    the batch sent from a sampled trace (`size` commands in all); each of them links back to
    it. (Not to a command of a trace not sampled: its span is not made, and a link to it would
    be encoded and exported for nothing — with a ratio sampler, most of a batch's.)"""
    sampled = [c for c in commits if c.is_recording()]
    contexts = [c.get_span_context() for c in sampled]
    batch = start(
        "rolecall.write_batch",
        root=True,
        links=contexts,
        attributes={"rolecall.batch.commands": size, "rolecall.batch.traced": len(contexts)},
    )
    linked = batch.get_span_context()
    for commit in sampled:
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
        _origins.popitem(last=False)


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
    made = origin  # of a trace not sampled: what the turn carries on
    if origin.trace_flags.sampled:
        nudged = start(
            "rolecall.nudge",
            parent=origin,
            attributes={"rolecall.event_id": event_id, **attributes},
        )
        nudged.end()
        made = nudged.get_span_context()
    if not waiting.nudges:
        waiting.since = time.time_ns()
    if len(waiting.nudges) < LINKS:
        waiting.nudges.append(made)


def turn(waiting: Waiting | None, **attributes: AttributeValue) -> AbstractContextManager[Span]:
    """`rolecall.turn`: the child of the first nudge it answers, linked to the others, from that
    nudge on; with `rolecall.turn.queue_wait` from the nudge to now. A turn no traced nudge
    woke starts a trace of its own."""
    if _tracer is None:
        return _OFF
    nudges = waiting.nudges if waiting is not None else []
    since = waiting.since if waiting is not None and nudges else None
    made = _start(
        "rolecall.turn",
        nudges[0] if nudges else None,
        not nudges,
        nudges[1:],
        attributes,
        since,
        SpanKind.INTERNAL,
    )
    if not isinstance(made, SpanContext) and since is not None and made.is_recording():
        queued = _tracer.start_span(
            "rolecall.turn.queue_wait", context=trace.set_span_in_context(made), start_time=since
        )
        queued.end()
    return _made(made)


def attempt(run_id: str, number: int) -> AbstractContextManager[Span]:
    """`rolecall.attempt`, known while it runs as the run's (for the tool calls its agent makes
    over HTTP or MCP)."""
    if _tracer is None:
        return _OFF
    if (here := _in_dropped_trace()) is not None:
        return _Attempt(nullcontext(here), here, run_id)
    made = _start(
        "rolecall.attempt", None, False, (), {"rolecall.attempt": number}, None, SpanKind.INTERNAL
    )
    inner = _made(made)
    return _Attempt(inner, inner.made, run_id)


class _Attempt(AbstractContextManager[Span]):
    """An attempt's span, current while it runs, and known as the run's running attempt."""

    __slots__ = ("_context", "_inner", "_run_id")

    def __init__(self, inner: AbstractContextManager[Span], made: Span, run_id: str) -> None:
        self._inner = inner
        self._run_id = run_id
        self._context = made.get_span_context()

    def __enter__(self) -> Span:
        made = self._inner.__enter__()
        _attempts[self._run_id] = self._context
        return made

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if _attempts.get(self._run_id) == self._context:
            del _attempts[self._run_id]
        self._inner.__exit__(kind, error, tb)


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
