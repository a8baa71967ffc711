"""Runs over HTTP: listing and reading runs and their turns, cancel, start fresh, retry of a
failed run, archived reads, the committed-event stream, and the run host's metrics — on the
whole application."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.engine.runtimes.base import AgentError, Prompt, TurnTools, Update
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent
from core.engine.runtimes.builtin.echo import Echo
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually

ANN = "person:ann"


def _role(name: str, **runtime: object) -> Role:
    return Role.model_validate(
        {
            "name": name,
            "display_name": name.title(),
            "runtime": {"kind": "builtin", "agent": "echo", **runtime},
        }
    )


async def _replies(api: Api, thread_id: str, count: int, role: str = "role:echo") -> list[str]:
    async def said() -> list[str] | None:
        page = await api.timeline(thread_id, "?limit=500&include_archived=true")
        said = [e["text"] for e in page["events"] if e.get("author") == role]
        return said if len(said) >= count else None

    return await eventually(said, what=f"{count} replies by {role}")


async def _run(api: Api, thread_id: str) -> dict[str, Any]:
    reply = await api.get(f"/api/v1/runs?thread={thread_id}")
    assert reply.status == 200, reply.text
    runs: list[dict[str, Any]] = reply.body["runs"]
    [run] = runs
    return run


async def test_a_message_to_a_role_gets_its_reply_and_the_run_shows_it(gateway: Api) -> None:
    thread = await gateway.thread(ANN, "role:echo")
    await gateway.say(thread["id"], ANN, "hello")

    assert await _replies(gateway, thread["id"], 1) == ["hello"]
    run = await _run(gateway, thread["id"])
    assert run["role"] == "echo" and run["kind"] == "conversation"
    assert run["status"] == "ready" and run["turns"] == 1
    assert run["session"]["number"] == 1 and run["session"]["awake"] is True
    assert (await gateway.get(f"/api/v1/runs/{run['id']}")).body["id"] == run["id"]

    turns = (await gateway.get(f"/api/v1/runs/{run['id']}/turns")).body
    [turn] = turns["turns"]
    assert turn["outcome"] == "replied" and turn["cause"] == "message"
    assert turn["prompt"]["news"][0]["text"] == "hello"
    assert turn["duration_ms"] >= 0 and turn["queue_wait_ms"] >= 0
    assert turns["next"] == 1 and turns["more"] is False
    assert (await gateway.get(f"/api/v1/runs/{run['id']}/turns?after=1")).body["turns"] == []


async def test_runs_are_listed_by_role_in_pages(gateway: Api) -> None:
    for name in ("p1", "p2", "p3"):
        thread = await gateway.thread(f"person:{name}", "role:echo")
        await gateway.say(thread["id"], f"person:{name}", "hi")
        await _replies(gateway, thread["id"], 1)

    first = (await gateway.get("/api/v1/runs?role=echo&limit=2")).body
    assert len(first["runs"]) == 2 and first["next"] == first["runs"][-1]["id"]
    rest = (await gateway.get(f"/api/v1/runs?role=echo&after={first['next']}")).body
    assert len(rest["runs"]) == 1 and rest["next"] is None


async def test_bad_run_requests_get_clear_errors(gateway: Api) -> None:
    (await gateway.get("/api/v1/runs")).error(422, "missing_parameter")
    (await gateway.get("/api/v1/runs?thread=x&role=echo")).error(422, "missing_parameter")
    (await gateway.get("/api/v1/runs?thread=nope")).error(404, "thread_not_found")
    (await gateway.get("/api/v1/runs/nope")).error(404, "run_not_found")
    (await gateway.get("/api/v1/runs/nope/turns")).error(404, "run_not_found")
    (await gateway.post("/api/v1/runs/nope/cancel")).error(404, "run_not_found")
    (await gateway.post("/api/v1/runs/nope/sessions")).error(404, "run_not_found")
    (await gateway.post("/api/v1/runs/nope/cancel", {"force": True})).error(422, "unknown_field")
    (await gateway.get("/api/v1/runs", token=None)).error(401, "unauthorized")


async def test_cancel_stops_a_running_turn_and_409s_when_none_runs(gateway: Api) -> None:
    thread = await gateway.thread(ANN, "role:slow")
    await gateway.say(thread["id"], ANN, "take your time")

    async def running() -> dict[str, Any] | None:
        run = await _run_or_none(gateway, thread["id"])
        return run if run and run["running"] else None

    run = await eventually(running, what="the turn started")

    started = time.monotonic()
    reply = await gateway.post(f"/api/v1/runs/{run['id']}/cancel")
    assert reply.status == 200, reply.text
    assert time.monotonic() - started < 1
    assert reply.body["cancelled"] is True and reply.body["run"]["running"] is False
    page = await gateway.timeline(thread["id"])
    assert page["events"][-1]["kind"] == "system"
    (await gateway.post(f"/api/v1/runs/{run['id']}/cancel")).error(409, "no_turn_running")


async def _run_or_none(api: Api, thread_id: str) -> dict[str, Any] | None:
    runs = (await api.get(f"/api/v1/runs?thread={thread_id}")).body["runs"]
    return runs[0] if runs else None


async def test_start_fresh_archives_what_was_said_before_it(gateway: Api) -> None:
    thread = await gateway.thread(ANN, "role:echo")
    await gateway.say(thread["id"], ANN, "old news")
    await _replies(gateway, thread["id"], 1)
    run = await _run(gateway, thread["id"])

    reply = await gateway.post(f"/api/v1/runs/{run['id']}/sessions")
    assert reply.status == 201, reply.text
    assert reply.body["session"]["number"] == 2 and reply.body["session"]["opened"] is False
    await gateway.say(thread["id"], ANN, "new news")
    await _replies(gateway, thread["id"], 2)

    shown = await gateway.timeline(thread["id"], f"?as={ANN}")
    assert [e.get("text") for e in shown["events"]][1:] == ["new news", "new news"]
    assert shown["events"][0]["kind"] == "system"
    latest = await gateway.timeline(thread["id"], f"?as={ANN}&latest=true")
    assert latest["events"] == shown["events"] and latest["more"] is False
    everything = await gateway.timeline(thread["id"], f"?as={ANN}&include_archived=true")
    assert [e.get("text") for e in everything["events"]][:2] == ["old news", "old news"]


async def test_the_committed_event_stream_long_polls(gateway: Api) -> None:
    head = (await gateway.get("/api/v1/events")).body["next"]
    thread = await gateway.thread(ANN, "role:echo")
    # with nothing committed, a poll is held until its wait ends, and then answers nothing
    started = asyncio.get_running_loop().time()
    idle = (await gateway.get(f"/api/v1/events?after={head}&wait=1")).body
    assert idle["events"] == [] and asyncio.get_running_loop().time() - started >= 0.9
    waiting = asyncio.create_task(gateway.get(f"/api/v1/events?after={head}&wait=10"))
    await gateway.say(thread["id"], ANN, "ping")
    page = (await waiting).body
    assert page["events"][0]["text"] == "ping" and page["next"] > head
    (await gateway.get("/api/v1/events?wait=31")).error(422)


async def test_metrics_count_turns_and_sessions(gateway: Api) -> None:
    thread = await gateway.thread(ANN, "role:echo")
    await gateway.say(thread["id"], ANN, "count me")
    await _replies(gateway, thread["id"], 1)

    text = (await gateway.get("/metrics")).text
    assert 'rolecall_turns_started_total{role="echo"} 1.0' in text
    assert 'rolecall_turns_finished_total{outcome="replied",role="echo"} 1.0' in text
    assert 'rolecall_sessions{state="awake"} 1.0' in text
    assert "rolecall_turn_queue_wait_seconds_count" in text
    assert "rolecall_turn_slots_in_use 0.0" in text


class Flaky(BuiltinAgent):
    """The echo agent, whose every attempt fails while `down` is set."""

    down = True

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        if Flaky.down:
            raise AgentError("the model endpoint is down")
        async for update in Echo(self.spec, self.state).turn(prompt, tools):
            yield update


FLAKY = Role.model_validate(
    {"name": "flaky", "display_name": "Flaky", "runtime": {"kind": "builtin", "agent": "flaky"}}
)


@pytest.fixture
async def flaky(tmp_path: Path) -> AsyncIterator[Api]:
    """The whole application serving `echo` and `flaky` (one attempt a turn)."""
    Flaky.down = True
    settings = make_settings(tmp_path, turn_attempts=1)
    runtimes = Runtimes(builtin_agents={**AGENTS, "flaky": Flaky})
    app = build_app(
        settings, api_token=TOKEN, roles={"echo": ECHO, "flaky": FLAKY}, runtimes=runtimes
    )
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


async def test_retry_takes_a_failed_runs_last_turn_again_and_answers_its_message(
    flaky: Api,
) -> None:
    thread = await flaky.thread(ANN, "role:flaky")
    await flaky.say(thread["id"], ANN, "are you there?")

    async def failed() -> dict[str, Any] | None:
        run = await _run_or_none(flaky, thread["id"])
        return run if run and run["status"] == "failed" and not run["running"] else None

    run = await eventually(failed, what="the run failed its turn")
    failed_cursor = run["cursor"]
    Flaky.down = False

    retried = await flaky.post(f"/api/v1/runs/{run['id']}/retry")

    assert retried.status == 200, retried.text
    assert retried.body["retried"] is True and retried.body["run"]["cursor"] < failed_cursor
    assert await _replies(flaky, thread["id"], 1, role="role:flaky") == ["are you there?"]
    done = await eventually(
        lambda: _ready(flaky, thread["id"]), what="the run ready after the retried turn"
    )
    assert done["turns"] == 2 and done["failures"] == 0
    turns = (await flaky.get(f"/api/v1/runs/{run['id']}/turns")).body["turns"]
    assert [t["outcome"] for t in turns] == ["failed", "replied"]
    assert turns[1]["cursor_from"] == turns[0]["cursor_from"]
    (await flaky.post(f"/api/v1/runs/{run['id']}/retry")).error(409, "not_failed")
    [record] = [
        r
        for r in (await flaky.get("/api/v1/audit?action=run.retry")).body["records"]
        if r["detail"]["run_id"] == run["id"]
    ]
    assert record["actor"] == "default" and record["client"] == "127.0.0.1"
    assert record["detail"]["before"] == {"cursor": failed_cursor}
    assert record["detail"]["after"] == {"cursor": retried.body["run"]["cursor"]}


async def _ready(api: Api, thread_id: str) -> dict[str, Any] | None:
    run = await _run_or_none(api, thread_id)
    return run if run and run["status"] == "ready" and not run["running"] else None


async def test_retry_refuses_a_ready_run_and_an_unknown_one(flaky: Api) -> None:
    thread = await flaky.thread(ANN, "role:echo")
    await flaky.say(thread["id"], ANN, "hello")
    await _replies(flaky, thread["id"], 1)
    run = await _run(flaky, thread["id"])

    (await flaky.post(f"/api/v1/runs/{run['id']}/retry")).error(409, "not_failed")
    (await flaky.post("/api/v1/runs/nope/retry")).error(404, "run_not_found")
    assert (await flaky.get("/api/v1/audit?action=run.retry")).body["records"] == []


async def test_a_roles_runs_filtered_by_status(flaky: Api) -> None:
    failing = await flaky.thread(ANN, "role:flaky")
    await flaky.say(failing["id"], ANN, "are you there?")

    async def failed() -> dict[str, Any] | None:
        run = await _run_or_none(flaky, failing["id"])
        return run if run and run["status"] == "failed" else None

    run = await eventually(failed, what="the run failed its turn")

    of_failed = (await flaky.get("/api/v1/runs?role=flaky&status=failed")).body["runs"]
    of_ready = (await flaky.get("/api/v1/runs?role=flaky&status=ready")).body["runs"]
    assert [r["id"] for r in of_failed] == [run["id"]] and of_ready == []
    (await flaky.get("/api/v1/runs?role=flaky&status=asleep")).error(422, "invalid_parameter")
    thread_filtered = await flaky.get(f"/api/v1/runs?thread={failing['id']}&status=failed")
    thread_filtered.error(422, "conflicting_parameters")
