"""One Slack message is one trace (docs/tracing.md): real slack-bolt over real HTTP on loopback,
against the fake Slack, the echo role answering; the gateway traces with an in-memory exporter.

From Slack's request to the post of the echo in the DM, every span is of one trace and each is
the child of the one before it: the request, the Slack event, the message's commit, the nudge,
the turn (its queue wait, its attempt with the session's wake and the agent), the reply's commit
and the Slack post (with the post's own commits). The write batches are traces of their own,
linked both ways with the commits they served. The turn's transcript keeps the trace's id. With
tracing off, nothing is traced and the transcript says so with a null `trace_id`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from core import tracing
from tests.api.openapi_doc import Document
from tests.slack.dm_gateway import SlackGateway, slack_gateway
from tests.slack.fake_slack import ALICE, FakeSlack
from tests.spans import Recorded, hex_id
from tests.waiting import eventually

SPANS = [
    "POST /slack/{role}/events",
    "rolecall.slack.event",
    "rolecall.commit",
    "rolecall.write_batch",
    "rolecall.nudge",
    "rolecall.turn",
    "rolecall.turn.queue_wait",
    "rolecall.attempt",
    "rolecall.session.wake",
    "rolecall.agent",
    "rolecall.slack.post",
]
"""The spans docs/tracing.md names for a Slack message answered in Slack."""


async def _turns(gw: SlackGateway) -> list[dict[str, Any]]:
    """The echo run's turns in Alice's conversation, the answer checked against the OpenAPI
    document."""
    threads = (await gw.api.get("/api/v1/threads?participant=person:alice")).body["threads"]
    [run] = (await gw.api.get(f"/api/v1/runs?thread={threads[0]['id']}")).body["runs"]
    path = f"/api/v1/runs/{run['id']}/turns"
    reply = await gw.api.get(path)
    Document().check("GET", path, reply)
    turns: list[dict[str, Any]] = reply.body["turns"]
    return turns


def _commit_of(recorded: Recorded, span: ReadableSpan) -> ReadableSpan:
    """The `rolecall.commit` span `span` descends from (the nearest)."""
    at = recorded.parent(span)
    while at is not None and at.name != "rolecall.commit":
        at = recorded.parent(at)
    assert at is not None, f"{span.name} has no commit above it"
    return at


async def test_a_slack_message_and_its_echo_are_one_trace(
    tmp_path: Path, fake_slack: FakeSlack, recorded: Recorded
) -> None:
    async with slack_gateway(tmp_path, fake_slack, tracer_provider=recorded.provider) as gw:
        status, _ = await gw.post_event(fake_slack.user_message(ALICE, "hello echo"))
        assert status == 200
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.args["text"] == "hello echo"
        [turn] = await eventually(lambda: _turns(gw), what="the echo's turn recorded")
    # The gateway has stopped: every span has ended.
    assert tracing.on() is False

    for name in SPANS:
        assert recorded.named(name), f"no {name} span"
    request = recorded.one("POST /slack/{role}/events")
    assert request.parent is None  # Slack's request starts the trace
    assert request.attributes is not None
    assert request.attributes["http.response.status_code"] == 200
    trace_id = request.context.trace_id
    assert turn["trace_id"] == hex_id(request)

    event = recorded.one("rolecall.slack.event")
    assert recorded.parent(event) is request
    nudge = recorded.one("rolecall.nudge", **{"rolecall.role": "echo"})
    said = recorded.parent(nudge)
    assert said is not None and said.name == "rolecall.commit"
    assert said.attributes is not None and said.attributes["rolecall.events"] == 1
    assert recorded.chain(said)[:2] == ["rolecall.slack.event", "POST /slack/{role}/events"]

    turn_span = recorded.one("rolecall.turn")
    assert recorded.parent(turn_span) is nudge
    assert turn_span.attributes is not None
    assert turn_span.attributes["rolecall.turn.outcome"] == "replied"
    assert turn_span.attributes["rolecall.run_id"] == turn["run_id"]
    [waited] = recorded.children(turn_span, "rolecall.turn.queue_wait")
    assert waited.start_time == turn_span.start_time  # from the nudge
    [attempt] = recorded.children(turn_span, "rolecall.attempt")
    assert [s.name for s in recorded.children(attempt)] == [
        "rolecall.session.wake",
        "rolecall.agent",
    ]
    [reply] = recorded.children(turn_span, "rolecall.commit")
    assert reply.attributes is not None and reply.attributes["rolecall.events"] == 1

    slack_post = recorded.one("rolecall.slack.post")
    assert _commit_of(recorded, slack_post) is reply
    assert recorded.chain(slack_post) == [
        "rolecall.commit",
        "rolecall.turn",
        "rolecall.nudge",
        "rolecall.commit",
        "rolecall.slack.event",
        "POST /slack/{role}/events",
    ]
    assert recorded.children(slack_post, "rolecall.commit")  # the outbox's intent and record

    # Every span from the request to the post is of the one trace; write batches are not.
    chained = [request, event, said, nudge, turn_span, waited, attempt, reply, slack_post]
    assert {span.context.trace_id for span in chained} == {trace_id}
    assert {s.name for s in recorded.of_trace(trace_id)} == set(SPANS) - {"rolecall.write_batch"}
    for batch in recorded.named("rolecall.write_batch"):
        assert batch.parent is None and batch.context.trace_id != trace_id
    for commit in (said, reply):
        [batch] = recorded.linked(commit)
        assert batch.name == "rolecall.write_batch"
        assert commit in recorded.linked(batch)


async def test_with_tracing_off_nothing_is_traced(tmp_path: Path, fake_slack: FakeSlack) -> None:
    async with slack_gateway(tmp_path, fake_slack) as gw:
        assert tracing.on() is False
        await gw.post_event(fake_slack.user_message(ALICE, "hello echo"))
        await fake_slack.wait_for("chat.postMessage")
        [turn] = await eventually(lambda: _turns(gw), what="the echo's turn recorded")
    assert turn["trace_id"] is None
