"""The `openai` runtime against a fake chat-completions server on loopback (`fake_openai.py`):
real HTTP both ways, the real gateway or run host, storage and tools. The model is the world
outside, so the fake is scripted per test; everything of ours is the real thing."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.engine.host import HostLimits, RunHost
from core.engine.host.drafts import Draft, DraftKind
from core.engine.runtimes.openai import ChatCompletionsRuntime, HistoryLimits
from core.engine.runtimes.openai.history import bounded
from core.engine.runtimes.openai.wire import Assembler, RequestedCall, SseDecoder
from core.engine.runtimes.registry import Runtimes
from core.engine.tools import TOOLS
from core.model.roles import ManifestError, Role
from core.model.runs.run import RunId
from core.storage.database import open_database
from gateway.app import build_app
from tests.host.scene import Scene
from tests.runtimes.fake_openai import FakeOpenAI, call, calls, fail, hang, say
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually

ANN = "person:ann"
KEY = "sk-test-0123456789"
SECRETS = {"MODEL_KEY": KEY}
FAST = HostLimits(backoff=0.01)
TOKEN = "test-operator-token-0123456789"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    server = FakeOpenAI()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def model_role(fake: FakeOpenAI, name: str = "model", **fields: Any) -> Role:
    runtime = {
        "kind": "openai",
        "base_url": fake.base_url,
        "model": "m",
        "api_key": "MODEL_KEY",
        **fields.pop("runtime", {}),
    }
    return Role.model_validate(
        {
            "name": name,
            "display_name": name.title(),
            "instructions": "You are a helpful model. Keep it short.",
            "runtime": runtime,
            **fields,
        }
    )


@asynccontextmanager
async def hosted(
    database_url: str, role: Role, *, limits: HostLimits = FAST
) -> AsyncIterator[Scene]:
    """The run host with the `openai` runtime, on a real database."""
    database = await open_database(database_url)
    runtimes = Runtimes(kinds={"openai": ChatCompletionsRuntime(SECRETS)})
    host = RunHost(database, {role.name: role}, runtimes, limits=limits)
    await host.start()
    try:
        yield Scene(database, host)
    finally:
        await host.stop()
        await database.close()


async def _turns(scene: Scene, run_id: str, count: int) -> list[Any]:
    async def enough() -> list[Any] | None:
        turns = await scene.db.runs.turns(run_id)
        return list(turns) if len(turns) >= count else None

    return await eventually(enough)


# --- through the whole gateway ----------------------------------------------------------------


async def test_the_model_stores_then_recalls_then_answers_through_the_gateway(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.script(
        call("store", {"payload": {"kind": "note", "text": "Ann likes tea"}}),
        call("recall", {"query": "tea"}),
        say("Noted: you like tea."),
    )
    settings = make_settings(tmp_path)
    app = build_app(settings, api_token=TOKEN, roles={"model": model_role(fake)}, secrets=SECRETS)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with serve(app) as server, aiohttp.ClientSession(headers=auth) as http:
        async with http.post(
            server.make_url("/api/v1/threads"), json={"participants": [ANN, "role:model"]}
        ) as resp:
            thread = (await resp.json())["id"]
        async with http.post(
            server.make_url(f"/api/v1/threads/{thread}/messages"),
            json={"author": ANN, "text": "remember that I like tea"},
        ) as resp:
            assert resp.status == 201

        async def replied() -> list[str] | None:
            url = server.make_url(f"/api/v1/threads/{thread}/timeline?limit=100")
            async with http.get(url) as resp:
                events = (await resp.json())["events"]
            said = [e["text"] for e in events if e.get("author") == "role:model"]
            return said or None

        assert await eventually(replied) == ["Noted: you like tea."]
        async with http.get(server.make_url(f"/api/v1/runs?thread={thread}")) as resp:
            [run] = (await resp.json())["runs"]
        async with http.get(server.make_url(f"/api/v1/runs/{run['id']}/turns")) as resp:
            [turn] = (await resp.json())["turns"]

    assert turn["outcome"] == "replied"
    store, recall, reply = turn["steps"]
    assert store["kind"] == "tool_call" and store["name"] == "store" and store["error"] is None
    assert store["arguments"] == {"payload": {"kind": "note", "text": "Ann likes tea"}}
    assert recall["name"] == "recall" and recall["error"] is None
    [entry] = recall["result"]["entries"]  # the memory entry exists, in this conversation
    assert entry["payload"] == {"kind": "note", "text": "Ann likes tea"} and entry["here"] is True
    assert entry["id"] == store["result"]["id"]
    assert reply == {"kind": "reply", "text": "Noted: you like tea."}

    first, second, third = fake.requests
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in fake.requests)
    assert first.body["model"] == "m" and first.body["stream"] is True
    assert "temperature" not in first.body
    offered = {t["function"]["name"]: t["function"] for t in first.body["tools"]}
    assert set(offered) == set(TOOLS)
    assert offered["store"]["parameters"] == TOOLS["store"].input_schema
    system, asked = first.messages
    assert system["role"] == "system" and system["content"].startswith("You are a helpful model.")
    assert asked["role"] == "user" and asked["name"] == "person_ann"
    assert asked["content"].startswith("person:ann (#")
    assert asked["content"].endswith("): remember that I like tea")
    # Each request carries the turn so far: the call, then its result, as the API has them.
    assert [m["role"] for m in third.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool",
    ]  # fmt: skip
    stored = json.loads(second.messages[-1]["content"])
    assert second.messages[-1]["tool_call_id"] == second.messages[-2]["tool_calls"][0]["id"]
    assert stored == store["result"]
    assert "Ann likes tea" in third.messages[-1]["content"]


def test_a_role_whose_key_setting_is_not_set_stops_the_gateway(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    role = Role.model_validate({"name": "model", "display_name": "Model",
                                "runtime": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1",
                                            "model": "m", "api_key": "MODEL_KEY"}})  # fmt: skip
    with pytest.raises(ManifestError, match=r"runtime\.api_key: the setting MODEL_KEY is not set"):
        build_app(settings, api_token=TOKEN, roles={"model": role}, secrets={})
    assert ChatCompletionsRuntime(SECRETS).problem(role) is None


# --- through the run host -----------------------------------------------------------------------


async def test_history_carries_across_turns_and_after_idle_sleep(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(say("Hello, Ann."), say("You said hello first."))
    role = model_role(fake, idle_sleep_after=0.2, runtime={"stream": False, "temperature": 0.3})
    async with hosted(database_url, role) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "hello")
        await scene.replies(thread, "role:model", 1)
        run = await scene.run_of(thread)
        await eventually(lambda: _asleep(scene, run.id), within=5)

        await scene.say(thread, ANN, "what did I say first?")
        replies = await scene.replies(thread, "role:model", 2)
        after = await scene.db.runs.get(run.id)

    assert replies == ["Hello, Ann.", "You said hello first."]
    first, second = fake.requests
    assert first.body["stream"] is False and first.body["temperature"] == 0.3
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[1] == first.messages[1]
    assert second.contents("assistant") == ["Hello, Ann."]
    assert second.messages[3]["content"].endswith("what did I say first?")
    # The history is the session's state, in our database — and the key is nowhere in it.
    assert after.session.id == run.session.id
    state = after.session.state
    assert state is not None and state["format"] == 1
    assert [m["role"] for m in state["messages"]] == ["user", "assistant", "user", "assistant"]
    assert KEY not in json.dumps(state)


async def _asleep(scene: Scene, run_id: RunId) -> bool:
    return not scene.host.is_awake(run_id)


async def test_a_fresh_session_opens_with_the_recent_conversation(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(say("Hi."), say("A fresh start."))
    async with hosted(database_url, model_role(fake)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "one")
        await scene.replies(thread, "role:model", 1)
        run = await scene.run_of(thread)
        await scene.host.start_fresh(run.id)
        await scene.say(thread, ANN, "two")
        await scene.replies(thread, "role:model", 2)

    opening = fake.requests[1].messages
    told = [(m["role"], m["content"]) for m in opening[1:]]
    assert told[0][0] == "user" and told[0][1].endswith("one")
    assert told[1] == ("assistant", "Hi.")
    assert told[-1][0] == "user" and told[-1][1].endswith("two")


async def test_streaming_sends_the_reply_in_pieces_then_whole(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(say("Hello there, Ann."))
    async with hosted(database_url, model_role(fake)) as scene:
        drafts: list[Draft] = []
        scene.host.watch_drafts(drafts.append)
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "hi")
        assert await scene.replies(thread, "role:model", 1) == ["Hello there, Ann."]

    assert fake.requests[0].body["stream"] is True
    assert fake.requests[0].headers["Accept"] == "text/event-stream"
    assert [(d.kind, d.text) for d in drafts] == [
        (DraftKind.CHUNK, "Hello "),
        (DraftKind.CHUNK, "there, "),
        (DraftKind.CHUNK, "Ann."),
        (DraftKind.END, ""),
    ]


async def test_a_tool_call_loop_is_cut_at_its_bound_and_ends_with_what_was_said(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(call("recall", {}, text="Let me look."))
    fake.always(call("recall", {"query": "more"}))
    role = model_role(fake, runtime={"max_tool_calls": 2})
    async with hosted(database_url, role) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "find everything")
        assert await scene.replies(thread, "role:model", 1) == ["Let me look."]
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)
        state = (await scene.db.runs.get(run.id)).session.state

    assert turn.outcome.value == "replied"
    assert [s["kind"] for s in turn.steps] == ["reply", "tool_call", "tool_call", "limit"]
    assert "more than 2 tool calls" in turn.steps[-1]["text"]
    assert len(fake.requests) == 3  # asked, asked with one result, asked with two: then cut
    # The call past the bound is answered "not run", so the history stays well formed.
    assert state is not None
    last = state["messages"][-1]
    assert last["role"] == "tool" and "not run" in last["content"]


async def test_a_tool_call_loop_that_never_answers_fails_the_turn(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.always(call("recall", {}))
    role = model_role(fake, runtime={"max_tool_calls": 1, "stream": False})
    async with hosted(database_url, role, limits=HostLimits(backoff=0.01, attempts=2)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "loop forever")
        [notice] = await scene.wait_for_notes(thread, 1)
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)
        after = await scene.db.runs.get(run.id)

    assert "could not answer" in notice
    assert turn.outcome.value == "failed" and len(turn.attempts) == 2
    assert "more than 1 tool calls in one turn; it said nothing" in (turn.error or "")
    assert after.status.value == "failed" and after.session.state is None  # no history kept
    assert len(fake.requests) == 4  # two per attempt


async def test_bad_tool_calls_go_back_to_the_model_as_errors(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(
        calls(("recall", "{not json"), ("no_such_tool", {}), ("store", {"payload": "text"})),
        say("Sorry, my calls were wrong."),
    )
    async with hosted(database_url, model_role(fake)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "try")
        assert await scene.replies(thread, "role:model", 1) == ["Sorry, my calls were wrong."]
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)

    unreadable, unknown, invalid = (s for s in turn.steps if s["kind"] == "tool_call")
    assert "not JSON" in unreadable["error"]
    assert unreadable["arguments"] == {"unreadable": "{not json"}
    assert "tool_not_found" in unknown["error"]
    assert invalid["error"] and invalid["result"] is None
    results = [m for m in fake.requests[1].messages if m["role"] == "tool"]
    assert len(results) == 3 and all("error" in json.loads(m["content"]) for m in results)


async def test_a_refused_key_fails_the_turn_with_a_clear_error_that_never_shows_the_key(
    fake: FakeOpenAI, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.always(fail(401, {"message": f"Incorrect API key provided: {KEY}"}))
    limits = HostLimits(backoff=0.01, attempts=2)
    async with hosted(database_url, model_role(fake), limits=limits) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "hello?")
        [notice] = await scene.wait_for_notes(thread, 1)
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)
        after = await scene.db.runs.get(run.id)

    assert "could not answer" in notice and KEY not in notice
    assert turn.outcome.value == "failed"
    error = after.last_error or ""
    assert "refused the request (HTTP 401)" in error and "MODEL_KEY" in error
    recorded = json.dumps([turn.error, [a.error for a in turn.attempts], list(turn.steps)])
    assert KEY not in error and KEY not in recorded and KEY not in caplog.text
    assert fake.requests[0].headers["Authorization"] == f"Bearer {KEY}"  # sent, as the bearer


async def test_a_short_retry_after_is_waited_out_within_the_attempt(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(fail(429, {"message": "slow down"}, {"Retry-After": "0"}), say("Here now."))
    async with hosted(database_url, model_role(fake)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "hello")
        assert await scene.replies(thread, "role:model", 1) == ["Here now."]
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)

    assert len(turn.attempts) == 1 and turn.attempts[0].error is None
    assert len(fake.requests) == 2


async def test_cancel_stops_the_request_in_flight(fake: FakeOpenAI, database_url: str) -> None:
    fake.script(hang())
    async with hosted(database_url, model_role(fake)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "take your time")
        await asyncio.wait_for(fake.hanging.wait(), 10)
        run = await scene.run_of(thread)

        assert await scene.host.cancel(run.id) is True
        await asyncio.wait_for(fake.gone.wait(), 10)  # the model saw the request go away
        [turn] = await _turns(scene, run.id, 1)

    assert turn.outcome.value == "cancelled"


# --- the history's bound (pure) ------------------------------------------------------------------


def _exchange(number: int, size: int = 10) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"q{number}"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{number}"}]},
        {"role": "tool", "tool_call_id": f"c{number}", "content": "x" * size},
        {"role": "assistant", "content": f"a{number}"},
    ]


def test_the_history_drops_its_oldest_whole_exchanges() -> None:
    history = [m for n in range(5) for m in _exchange(n)]

    kept = bounded(history, HistoryLimits(max_messages=10, max_bytes=100_000))
    assert kept == _exchange(3) + _exchange(4)  # 8 messages: never half an exchange

    big = [*_exchange(0), *_exchange(1, size=5_000), *_exchange(2)]
    kept = bounded(big, HistoryLimits(max_messages=100, max_bytes=1_000))
    assert kept == _exchange(2)

    huge = _exchange(0, size=50_000)
    assert bounded(huge, HistoryLimits(max_messages=2, max_bytes=1_000)) == huge  # the newest


def test_stream_shapes_of_other_servers_are_assembled() -> None:
    decoder = SseDecoder()
    lines = [": ping", 'data:{"a":', "data: 1}", "", "event: x", "data: [DONE]", ""]
    assert [d for line in lines if (d := decoder.line(line)) is not None] == [
        '{"a":\n1}',
        "[DONE]",
    ]

    assembler = Assembler()
    pieces = [
        {"choices": [{"delta": {"reasoning_content": "think"}}]},
        {"choices": [{"delta": {"content": "Hi"}}]},
        {"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "rec"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "all"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]},
        {"choices": [], "usage": {"total_tokens": 3}},
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    assert [assembler.feed(p) for p in pieces] == ["", "Hi", "", "", "", "", ""]
    message = assembler.message()
    assert message.content == "Hi" and message.reasoning == "think"
    assert message.tool_calls == (RequestedCall("a", "recall", "{}"),)
    assert message.finish_reason == "tool_calls"
