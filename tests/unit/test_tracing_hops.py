"""`core.tracing` across the hops that are not calls, with the SDK's in-memory exporter.

- A tool call that arrives as a request of its own (over HTTP or MCP) while the run's attempt
  runs in this process is a span of the attempt's trace, linked to the request's span; with no
  attempt running, it is the request's child.
- A turn is the child of the first nudge it answers and links to the later ones; its queue wait
  runs from that nudge; a turn that no traced nudge woke starts a trace of its own.
- A delivery of an event whose commit is not known here starts a trace of its own, unless it
  is history (`alone=False`), which is not traced.
- A trace the sampler dropped makes no span further down, its context carried on instead.
- Off, nothing is made and nothing is kept.
"""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased

from core import tracing
from tests.spans import Recorded


@pytest.mark.usefixtures("core_spans")
async def test_a_tool_call_from_elsewhere_joins_the_running_attempt(recorded: Recorded) -> None:
    tracer = recorded.provider.get_tracer("test")
    running, done = asyncio.Event(), asyncio.Event()

    async def turn() -> None:
        with tracer.start_as_current_span("turn"), tracing.attempt("run-1", 1):
            running.set()
            await done.wait()

    turning = asyncio.create_task(turn())
    await running.wait()
    with tracer.start_as_current_span("POST /mcp"), tracing.tool_call("run-1", "store"):
        pass
    done.set()
    await turning
    with tracer.start_as_current_span("POST /mcp later"), tracing.tool_call("run-1", "recall"):
        pass

    attempt = recorded.one("rolecall.attempt")
    during = recorded.one("rolecall.tool_call", **{"rolecall.tool.name": "store"})
    assert recorded.parent(during) is attempt
    assert recorded.linked(during) == [recorded.one("POST /mcp")]
    after = recorded.one("rolecall.tool_call", **{"rolecall.tool.name": "recall"})
    assert recorded.parent(after) is recorded.one("POST /mcp later")
    assert after.links == ()


@pytest.mark.usefixtures("core_spans")
def test_a_turn_continues_the_first_nudge_and_links_the_others(recorded: Recorded) -> None:
    tracer = recorded.provider.get_tracer("test")
    waiting = tracing.Waiting()
    for number in (1, 2):
        with tracer.start_as_current_span(f"commit {number}") as commit:
            tracing.remember(f"event-{number}", commit.get_span_context())
        tracing.nudge(waiting, f"event-{number}")
    tracing.nudge(waiting, "event-unknown")  # committed elsewhere: no nudge span
    waited = waiting.take()
    assert waiting.nudges == [] and len(waited.nudges) == 2
    with tracing.turn(waited, **{"rolecall.role": "echo"}):
        pass
    with tracing.turn(tracing.Waiting()):
        pass

    first, second = recorded.named("rolecall.nudge")
    assert recorded.chain(first) == ["commit 1"]
    woken, alone = recorded.named("rolecall.turn")
    assert recorded.parent(woken) is first
    assert recorded.linked(woken) == [second]
    [queued] = recorded.children(woken, "rolecall.turn.queue_wait")
    assert queued.start_time == woken.start_time == waited.since
    assert alone.parent is None and not recorded.children(alone, "rolecall.turn.queue_wait")


@pytest.mark.usefixtures("core_spans")
def test_a_delivery_of_an_unknown_commit_is_a_trace_of_its_own_unless_history(
    recorded: Recorded,
) -> None:
    with tracing.delivery("rolecall.slack.post", "elsewhere"):
        pass
    with tracing.delivery("rolecall.widget.stream", "elsewhere", alone=False):
        pass
    post = recorded.one("rolecall.slack.post")
    assert post.parent is None
    assert post.attributes is not None and post.attributes["rolecall.event_id"] == "elsewhere"
    assert recorded.named("rolecall.widget.stream") == []


def test_off_nothing_is_made_or_kept() -> None:
    spans = Recorded()
    try:
        tracing.nudge(tracing.Waiting(), "event")
        with tracing.span("x") as made, tracing.turn(None), tracing.attempt("run", 1):
            assert not made.get_span_context().is_valid
        with tracing.commit_span(object()) as commit:
            assert commit is None
        assert tracing.current_trace_id() is None
        assert spans.spans == ()
    finally:
        spans.close()


def test_a_trace_the_sampler_dropped_makes_no_span_and_keeps_its_context() -> None:
    """Below a span that was not sampled nothing is made — the commit, the nudge, the turn
    carry the dropped context on — so the turn is not sampled afresh as a trace of its own."""
    spans = Recorded(sampler=ParentBased(ALWAYS_OFF))
    tracing.enable(spans.provider)
    try:
        tracer = spans.provider.get_tracer("test")
        with tracer.start_as_current_span("request") as request, tracing.span("child") as child:
            dropped = request.get_span_context()
            assert child.get_span_context() == dropped
            with tracing.commit_span(object()) as commit:
                assert commit is not None and commit.get_span_context() == dropped
        tracing.remember("event", dropped)
        waiting = tracing.Waiting()
        tracing.nudge(waiting, "event")
        assert waiting.nudges == [dropped]
        with tracing.turn(waiting.take()), tracing.attempt("run", 1):
            assert trace.get_current_span().get_span_context() == dropped
            assert tracing.current_trace_id() is None
        assert spans.spans == ()
    finally:
        tracing.disable()
        spans.close()
