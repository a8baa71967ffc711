"""Every attempt's steps are kept in the turn's transcript, failed or not, for every runtime:
what an attempt did before it failed, timed out or was cancelled — tool calls whose effects
stay among it — followed by an `attempt` step saying how it ended; the attempt that succeeded
comes last. Read as an operator reads them, over real HTTP (`GET /api/v1/runs/{id}/turns`),
from the whole gateway on a SQLite file: the `openai` runtime against the fake model endpoint
(`fake_openai.py`), the `acp` runtime with a real agent process that dies mid-turn
(`failing_acp_agent.py`), and built-in agents that fail, time out and are cancelled."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar, cast

import aiohttp
import pytest

from core.engine.runtimes.base import AgentError, Prompt, Step, ToolCall, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import TOKEN, Api
from tests.runtimes.fake_openai import FakeOpenAI, call, fail, say
from tests.serving import free_port, serve
from tests.settings import make_settings
from tests.waiting import eventually

ANN = "person:ann"
MODEL_KEY = {"MODEL_KEY": "sk-test-0123456789"}
FAILING_ACP = Path(__file__).with_name("failing_acp_agent.py").resolve()


@asynccontextmanager
async def gateway(
    tmp_path: Path,
    role: Role,
    *,
    runtimes: Runtimes | None = None,
    secrets: dict[str, str] | None = None,
) -> AsyncIterator[Api]:
    """The gateway serving `role` on loopback (on the port its settings name, where agents
    outside the process reach their tools), two attempts a turn, a short backoff."""
    port = free_port()
    settings = make_settings(tmp_path, port=port, turn_attempts=2, retry_backoff=0.01)
    app = build_app(
        settings, api_token=TOKEN, roles={role.name: role}, runtimes=runtimes, secrets=secrets
    )
    async with serve(app, port=port) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


async def _first_turn(api: Api, role: str, text: str) -> tuple[str, dict[str, Any]]:
    """Ann says `text` to `role`: the conversation's id and its run's first turn, once ended."""
    thread: str = (await api.thread(ANN, f"role:{role}"))["id"]
    await api.say(thread, ANN, text)

    async def ended() -> tuple[str, dict[str, Any]] | None:
        runs = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        if not runs:
            return None
        turns = (await api.get(f"/api/v1/runs/{runs[0]['id']}/turns")).body["turns"]
        return (thread, turns[0]) if turns else None

    return await eventually(ended, what=f"the first turn of {role}", within=60)


def _by_attempt(steps: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The steps split by attempt: each failed attempt's end with its `attempt` step; the
    steps after the last such step (if any) are the attempt that succeeded."""
    parts: list[list[dict[str, Any]]] = [[]]
    for step in steps:
        parts[-1].append(step)
        if step["kind"] == "attempt":
            parts.append([])
    return parts if parts[-1] else parts[:-1]


async def _memory(api: Api, role: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = (await api.get(f"/api/v1/roles/{role}/memory")).body["entries"]
    return entries


# --- openai ---------------------------------------------------------------------------------


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def model_role(fake: FakeOpenAI, **runtime: Any) -> Role:
    return Role.model_validate(
        {
            "name": "model",
            "display_name": "Model",
            "runtime": {"kind": "openai", "base_url": fake.base_url, "model": "m",
                        "api_key": "MODEL_KEY", "stream": False, **runtime},
        }
    )  # fmt: skip


async def test_an_openai_turn_past_max_tool_calls_keeps_each_attempts_calls_and_limit_step(
    model: FakeOpenAI, tmp_path: Path
) -> None:
    """A model that only ever calls `store`, allowed one call a turn: each attempt runs its
    call (the entry stays in memory), is cut off with a `limit` step, and fails; the failed
    turn's transcript holds both attempts' calls and limit steps, each ended by its note."""
    model.always(call("store", {"payload": {"kind": "note", "text": "tea"}}))
    async with gateway(tmp_path, model_role(model, max_tool_calls=1), secrets=MODEL_KEY) as api:
        _, turn = await _first_turn(api, "model", "remember tea, forever")
        entries = await _memory(api, "model")

    assert turn["outcome"] == "failed" and len(turn["attempts"]) == 2
    first, second = _by_attempt(turn["steps"])
    for number, steps, attempt in zip((1, 2), (first, second), turn["attempts"], strict=True):
        store, limit, ended = steps
        assert store["kind"] == "tool_call" and store["name"] == "store"
        assert store["arguments"] == {"payload": {"kind": "note", "text": "tea"}}
        assert store["error"] is None and store["result"]["id"]
        assert limit == {
            "kind": "limit",
            "text": "the model asked for more than 1 tool calls in one turn; it said nothing, "
            "so the turn fails",
        }
        assert ended == {"kind": "attempt", "text": f"attempt {number} failed: {attempt['error']}"}
        assert "AgentError: the model asked for more than 1 tool calls" in attempt["error"]
    stored = {first[0]["result"]["id"], second[0]["result"]["id"]}
    assert {e["id"] for e in entries} == stored  # what the failed attempts did stays done
    assert len(model.requests) == 4  # two per attempt


async def test_an_openai_turn_that_succeeds_on_its_retry_keeps_the_failed_attempts_call(
    model: FakeOpenAI, tmp_path: Path
) -> None:
    """The first attempt runs a call, then the endpoint fails (HTTP 500); the retry answers.
    The transcript: the first attempt's call and its note, then the answer."""
    model.script(
        call("recall", {"query": "tea"}), fail(500, {"message": "overloaded"}), say("No tea.")
    )
    async with gateway(tmp_path, model_role(model), secrets=MODEL_KEY) as api:
        _, turn = await _first_turn(api, "model", "what about tea?")

    assert turn["outcome"] == "replied"
    assert [a["error"] is None for a in turn["attempts"]] == [False, True]
    (recall, ended), answered = _by_attempt(turn["steps"])
    assert recall["kind"] == "tool_call" and recall["name"] == "recall"
    assert recall["result"] == {"entries": []}
    assert ended["kind"] == "attempt" and ended["text"].startswith("attempt 1 failed: ")
    assert "overloaded" in ended["text"]
    assert answered == [{"kind": "reply", "text": "No tea."}]


# --- acp ------------------------------------------------------------------------------------


def failing_acp_role() -> Role:
    return Role.model_validate(
        {
            "name": "agent",
            "display_name": "Agent",
            "runtime": {"kind": "acp", "command": sys.executable, "args": [str(FAILING_ACP)]},
        }
    )


async def test_an_acp_agent_that_dies_mid_turn_leaves_what_it_did_in_each_attempt(
    tmp_path: Path,
) -> None:
    """The agent thinks, stores over MCP, opens a tool call it never finishes, writes half a
    reply and exits: each attempt keeps its thought, both calls (the open one "not finished"),
    the reply it was writing as a `draft` step (never posted), and its note."""
    async with gateway(tmp_path, failing_acp_role()) as api:
        thread, turn = await _first_turn(api, "agent", "store-then-crash my locker is 42")
        entries = await _memory(api, "agent")
        page = await api.timeline(thread)

    assert turn["outcome"] == "failed" and len(turn["attempts"]) == 2
    for number, steps in enumerate(_by_attempt(turn["steps"]), start=1):
        done = [s for s in steps if s["kind"] != "note"]  # the session's own notes aside
        thought, store, opened, draft, ended = done
        assert thought == {"kind": "thought", "text": "Storing it."}
        assert store["kind"] == "tool_call" and store["name"] == "mcp__rolecall__store"
        assert store["arguments"] == {"payload": {"said": "my locker is 42"}}
        assert store["error"] is None
        assert opened["kind"] == "tool_call" and opened["name"] == "Look it up"
        assert opened["error"] == "not finished (status in_progress)"
        assert draft == {"kind": "draft", "text": "I stored it and was about to"}
        assert ended["kind"] == "attempt" and ended["text"].startswith(f"attempt {number} failed")
        assert "exited with code 3" in ended["text"]
    assert [e["payload"] for e in entries] == 2 * [{"said": "my locker is 42"}]
    assert [e for e in page["events"] if e.get("author") == "role:agent"] == []  # nothing posted


# --- builtin --------------------------------------------------------------------------------


class Worker(BuiltinAgent):
    """Stores what it was told and says so in its transcript, then — by the message's first
    word — fails (`fail`), or waits for ever (`wait`: for the timeout, or a cancel)."""

    working: ClassVar[asyncio.Event]

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        said = next(e.text or "" for e in prompt.news if e.kind == "message")
        word, _, rest = said.partition(" ")
        yield Step("thought", f"storing {rest}")
        stored = await tools.store({"said": rest})
        yield ToolCall("store", {"payload": {"said": rest}}, result=stored)
        if word == "fail":
            raise AgentError("the worker broke after storing")
        type(self).working.set()
        await asyncio.Event().wait()
        yield Step("thought", "never")


def worker_role(**fields: Any) -> Role:
    return Role.model_validate(
        {
            "name": "worker",
            "display_name": "Worker",
            "runtime": {"kind": "builtin", "agent": "worker"},
            **fields,
        }
    )


def worker_agent() -> tuple[type[Worker], Runtimes]:
    """A Worker class of the test's own (its `working` event is the test's), and the runtimes
    that serve it."""
    agent = cast(type[Worker], type("W", (Worker,), {"working": asyncio.Event()}))
    return agent, Runtimes({"worker": agent})


def _steps_of_one_attempt(steps: list[dict[str, Any]], rest: str) -> None:
    thought, store = steps[:2]
    assert thought == {"kind": "thought", "text": f"storing {rest}"}
    assert store["kind"] == "tool_call" and store["name"] == "store"
    assert store["arguments"] == {"payload": {"said": rest}} and store["result"]["id"]


async def test_a_builtin_agent_that_fails_keeps_each_attempts_steps(tmp_path: Path) -> None:
    _, runtimes = worker_agent()
    async with gateway(tmp_path, worker_role(), runtimes=runtimes) as api:
        _, turn = await _first_turn(api, "worker", "fail the blue file")
        entries = await _memory(api, "worker")

    assert turn["outcome"] == "failed" and len(turn["attempts"]) == 2
    attempts = _by_attempt(turn["steps"])
    assert len(attempts) == 2
    for number, steps in enumerate(attempts, start=1):
        _steps_of_one_attempt(steps, "the blue file")
        assert steps[2:] == [
            {
                "kind": "attempt",
                "text": f"attempt {number} failed: AgentError: the worker broke after storing",
            }
        ]
    assert len(entries) == 2


async def test_a_builtin_attempt_that_times_out_keeps_its_steps(tmp_path: Path) -> None:
    _, runtimes = worker_agent()
    async with gateway(tmp_path, worker_role(turn_timeout=0.5), runtimes=runtimes) as api:
        _, turn = await _first_turn(api, "worker", "wait the red file")

    assert turn["outcome"] == "failed"
    for number, steps in enumerate(_by_attempt(turn["steps"]), start=1):
        _steps_of_one_attempt(steps, "the red file")
        assert steps[2:] == [
            {
                "kind": "attempt",
                "text": f"attempt {number} failed: the turn took longer than the role's "
                "turn_timeout",
            }
        ]


async def test_a_cancelled_builtin_attempt_keeps_its_steps(tmp_path: Path) -> None:
    agent, runtimes = worker_agent()
    async with gateway(tmp_path, worker_role(), runtimes=runtimes) as api:
        thread = (await api.thread(ANN, "role:worker"))["id"]
        await api.say(thread, ANN, "wait the green file")
        await asyncio.wait_for(agent.working.wait(), 15)  # its steps so far are collected
        [run] = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        cancelled = await api.post(f"/api/v1/runs/{run['id']}/cancel")
        assert cancelled.status == 200, cancelled.text

        async def ended() -> list[dict[str, Any]] | None:
            turns: list[dict[str, Any]] = (await api.get(f"/api/v1/runs/{run['id']}/turns")).body[
                "turns"
            ]
            return turns or None

        [turn] = await eventually(ended, what="the cancelled turn")

    assert turn["outcome"] == "cancelled"
    [steps] = _by_attempt(turn["steps"])
    _steps_of_one_attempt(steps, "the green file")
    assert steps[2:] == [{"kind": "attempt", "text": "attempt 1 was cancelled by an operator"}]
