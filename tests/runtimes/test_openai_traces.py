"""A model's tool calls in a traced turn (docs/tracing.md): each call the model asks for is a
`rolecall.tool_call` span under the agent's, with the tool's name and outcome (an unknown tool's
error code too), and an event of the agent's span as the transcript records it; what the tool
commits is a span of the call. The turn continues the trace of the message it answers, and its
transcript keeps that trace's id. The real run host and tools against the fake chat-completions
server, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from tests.runtimes.fake_openai import FakeOpenAI, call, say
from tests.runtimes.test_openai_runtime import ANN, _turns, fake, hosted, model_role
from tests.spans import Recorded, hex_id

__all__ = ["fake"]  # the fake model server, a fixture


@pytest.mark.usefixtures("core_spans")
async def test_each_tool_call_is_a_span_with_its_name_and_outcome(
    fake: FakeOpenAI, database_url: str, recorded: Recorded
) -> None:
    fake.script(call("store", {"payload": {"desk": "4B"}}), call("no_such_tool", {}), say("Ok."))
    tracer = recorded.provider.get_tracer("test")
    async with hosted(database_url, model_role(fake)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        with tracer.start_as_current_span("a person's request"):
            await scene.say(thread, ANN, "remember my desk")
        assert await scene.replies(thread, "role:model", 1) == ["Ok."]
        [turn] = await _turns(scene, (await scene.run_of(thread)).id, 1)

    request = recorded.one("a person's request")
    assert turn.trace_id == hex_id(request)
    [agent] = recorded.named("rolecall.agent")
    assert recorded.chain(agent)[:2] == ["rolecall.attempt", "rolecall.turn"]
    assert agent.context.trace_id == request.context.trace_id
    stored = recorded.one("rolecall.tool_call", **{"rolecall.tool.name": "store"})
    missing = recorded.one("rolecall.tool_call", **{"rolecall.tool.name": "no_such_tool"})
    assert recorded.parent(stored) is agent and recorded.parent(missing) is agent
    assert stored.attributes is not None and stored.attributes["rolecall.tool.outcome"] == "ok"
    assert missing.attributes is not None
    assert missing.attributes["rolecall.tool.outcome"] == "error"
    assert missing.attributes["rolecall.error.code"] == "tool_not_found"
    assert recorded.children(stored, "rolecall.commit")  # the memory entry, stored in the call
    told = [(e.name, dict(e.attributes or {})) for e in agent.events]
    assert told == [
        ("rolecall.tool_call", {"rolecall.tool.name": "store", "rolecall.tool.outcome": "ok"}),
        (
            "rolecall.tool_call",
            {"rolecall.tool.name": "no_such_tool", "rolecall.tool.outcome": "error"},
        ),
    ]
