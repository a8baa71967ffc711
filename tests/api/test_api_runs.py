"""Runs over HTTP: listing and reading runs and their turns, cancel, start fresh, archived reads,
the committed-event stream, and the run host's metrics — on the whole application."""

from __future__ import annotations

import asyncio
import time

from core.model.roles import Role
from tests.api.conftest import Api

ANN = "person:ann"


def _role(name: str, **runtime: object) -> Role:
    return Role(
        name=name,
        display_name=name.title(),
        runtime={"kind": "builtin", "agent": "echo", **runtime},
    )


async def _replies(api: Api, thread_id: str, count: int, role: str = "role:echo") -> list[str]:
    deadline = time.monotonic() + 10
    while True:
        page = await api.timeline(thread_id, "?limit=500&include_archived=true")
        said = [e["text"] for e in page["events"] if e.get("author") == role]
        if len(said) >= count or time.monotonic() > deadline:
            return said
        await asyncio.sleep(0.02)


async def _run(api: Api, thread_id: str) -> dict:
    reply = await api.get(f"/api/v1/runs?thread={thread_id}")
    assert reply.status == 200, reply.text
    [run] = reply.body["runs"]
    return run


async def test_a_message_to_a_role_gets_its_reply_and_the_run_shows_it(gateway) -> None:
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


async def test_runs_are_listed_by_role_in_pages(gateway) -> None:
    for name in ("p1", "p2", "p3"):
        thread = await gateway.thread(f"person:{name}", "role:echo")
        await gateway.say(thread["id"], f"person:{name}", "hi")
        await _replies(gateway, thread["id"], 1)

    first = (await gateway.get("/api/v1/runs?role=echo&limit=2")).body
    assert len(first["runs"]) == 2 and first["next"] == first["runs"][-1]["id"]
    rest = (await gateway.get(f"/api/v1/runs?role=echo&after={first['next']}")).body
    assert len(rest["runs"]) == 1 and rest["next"] is None


async def test_bad_run_requests_get_clear_errors(gateway) -> None:
    (await gateway.get("/api/v1/runs")).error(422, "missing_parameter")
    (await gateway.get("/api/v1/runs?thread=x&role=echo")).error(422, "missing_parameter")
    (await gateway.get("/api/v1/runs?thread=nope")).error(404, "thread_not_found")
    (await gateway.get("/api/v1/runs/nope")).error(404, "run_not_found")
    (await gateway.get("/api/v1/runs/nope/turns")).error(404, "run_not_found")
    (await gateway.post("/api/v1/runs/nope/cancel")).error(404, "run_not_found")
    (await gateway.post("/api/v1/runs/nope/sessions")).error(404, "run_not_found")
    (await gateway.post("/api/v1/runs/nope/cancel", {"force": True})).error(422, "unknown_field")
    (await gateway.get("/api/v1/runs", token=None)).error(401, "unauthorized")


async def test_cancel_stops_a_running_turn_and_409s_when_none_runs(gateway) -> None:
    thread = await gateway.thread(ANN, "role:slow")
    await gateway.say(thread["id"], ANN, "take your time")
    deadline = time.monotonic() + 5
    while not (run := await _run_or_none(gateway, thread["id"])) or not run["running"]:
        assert time.monotonic() < deadline, "the turn never started"
        await asyncio.sleep(0.02)

    started = time.monotonic()
    reply = await gateway.post(f"/api/v1/runs/{run['id']}/cancel")
    assert reply.status == 200, reply.text
    assert time.monotonic() - started < 1
    assert reply.body["cancelled"] is True and reply.body["run"]["running"] is False
    page = await gateway.timeline(thread["id"])
    assert page["events"][-1]["kind"] == "system"
    (await gateway.post(f"/api/v1/runs/{run['id']}/cancel")).error(409, "no_turn_running")


async def _run_or_none(api: Api, thread_id: str) -> dict | None:
    runs = (await api.get(f"/api/v1/runs?thread={thread_id}")).body["runs"]
    return runs[0] if runs else None


async def test_start_fresh_archives_what_was_said_before_it(gateway) -> None:
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


async def test_the_committed_event_stream_long_polls(gateway) -> None:
    head = (await gateway.get("/api/v1/events")).body["next"]
    thread = await gateway.thread(ANN, "role:echo")
    waiting = asyncio.create_task(gateway.get(f"/api/v1/events?after={head}&wait=10"))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    await gateway.say(thread["id"], ANN, "ping")
    page = (await waiting).body
    assert page["events"][0]["text"] == "ping" and page["next"] > head
    (await gateway.get("/api/v1/events?wait=31")).error(422)


async def test_metrics_count_turns_and_sessions(gateway) -> None:
    thread = await gateway.thread(ANN, "role:echo")
    await gateway.say(thread["id"], ANN, "count me")
    await _replies(gateway, thread["id"], 1)

    text = (await gateway.get("/metrics")).text
    assert 'rolecall_turns_started_total{role="echo"} 1.0' in text
    assert 'rolecall_turns_finished_total{outcome="replied",role="echo"} 1.0' in text
    assert 'rolecall_sessions{state="awake"} 1.0' in text
    assert "rolecall_turn_queue_wait_seconds_count" in text
    assert "rolecall_turn_slots_in_use 0.0" in text
