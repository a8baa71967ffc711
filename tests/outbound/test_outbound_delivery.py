"""The gateway's committed events reach a registered endpoint as Standard Webhooks, over real
HTTP on loopback: signed (verified with the `standardwebhooks` package), in order, each exactly
once after the receiver deduplicates by `webhook-id` — through 500s, a 429 with `Retry-After`,
a 410, parking and replay, and a restart mid-backoff."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from standardwebhooks import Webhook

from tests.outbound.conftest import (
    Receiver,
    endpoint,
    gateway,
    outbound_settings,
    register,
)
from tests.waiting import eventually

ALICE, BO = "person:alice", "person:bo"


def _verified(secret: str, received: Any) -> dict[str, Any]:
    """The payload, after `standardwebhooks` verified its signature (raises otherwise)."""
    data: dict[str, Any] = Webhook(secret).verify(received.body, received.headers)
    return data


async def test_every_event_arrives_once_in_order_and_signed_through_failures(
    tmp_path: Path, receiver: Receiver
) -> None:
    receiver.script("/hook", (500, {}), (500, {}), (500, {}), (429, {"Retry-After": "1"}))
    async with gateway(outbound_settings(tmp_path)) as api:
        made = await register(api, receiver.url(), kinds=["message", "participant_state_changed"])
        assert made["secret"].startswith("whsec_")
        thread = await api.thread(ALICE, BO)
        sent = [await api.say(thread["id"], ALICE, f"message {i}") for i in range(5)]
        sent.append(await api.set_state(thread["id"], BO, "removed"))

        await eventually(lambda: _accepted_all(receiver, len(sent)))
        committed = (await api.get(f"/api/v1/events?after={sent[0]['position'] - 1}")).body

    # Exactly once each, after deduplication; every repeat was a retry of a failed attempt.
    firsts: dict[str, Any] = {}
    for got in receiver.at("/hook"):
        if got.ok:
            assert got.id not in firsts, f"{got.id} was accepted twice"
            firsts[got.id] = got
    attempts = Counter(got.id for got in receiver.at("/hook"))
    for got in receiver.at("/hook"):
        if not got.ok:
            assert got.id in firsts and attempts[got.id] > 1
    assert attempts[sent[0]["id"]] == 5  # 500, 500, 500, 429, then 200
    assert sum(attempts.values()) == len(sent) + 4

    # In order, signed, with the event as the API shows it.
    assert list(firsts) == [event["id"] for event in sent]
    by_id = {event["id"]: event for event in committed["events"]}
    for got in firsts.values():
        data = _verified(made["secret"], got)
        event = by_id[got.id]
        assert data == {
            "type": f"timeline.{event['kind']}",
            "timestamp": event["at"],
            "data": event,
        }
        assert got.headers["Content-Type"] == "application/json"
    # Retry-After was honoured: a second at least between the 429 and the next attempt.
    first_tries = receiver.at("/hook")[:5]
    assert [t.status for t in first_tries] == [500, 500, 500, 429, 200]
    assert first_tries[4].at - first_tries[3].at >= 0.95
    # A retry is the same request, signed again: same id and body.
    assert len({t.body for t in first_tries}) == 1


async def _accepted_all(receiver: Receiver, n: int) -> bool:
    return len({got.id for got in receiver.accepted()}) >= n


async def test_a_410_disables_the_endpoint(tmp_path: Path, receiver: Receiver) -> None:
    receiver.answer_always("/gone", 410)
    async with gateway(outbound_settings(tmp_path)) as api:
        made = await register(api, receiver.url("/gone"))
        thread = await api.thread(ALICE, BO)
        await api.say(thread["id"], ALICE, "anyone there?")

        async def disabled() -> dict[str, Any] | None:
            found = await endpoint(api, made["id"])
            return found if found["status"] == "disabled" else None

        found = await eventually(disabled)
        assert "410" in found["reason"] and found["next_attempt_at"] is None
        # a second endpoint's delivery of the next message: the commit that would have woken
        # the disabled endpoint's worker, had it kept one, has been sent out
        await register(api, receiver.url("/marker"), kinds=["message"])
        await api.say(thread["id"], ALICE, "still there?")
        await eventually(lambda: _accepted_all_of(receiver, "/marker", 1), what="the marker")
        assert len(receiver.at("/gone")) == 1  # nothing more is sent to it


async def test_repeated_failure_parks_it_and_replay_resumes(
    tmp_path: Path, receiver: Receiver
) -> None:
    receiver.answer_always("/flaky", 503)
    settings = outbound_settings(tmp_path, endpoints_park_after=3)
    async with gateway(settings) as api:
        made = await register(api, receiver.url("/flaky"), kinds=["message"])
        thread = await api.thread(ALICE, BO)
        first = await api.say(thread["id"], ALICE, "one")
        second = await api.say(thread["id"], ALICE, "two")

        async def parked() -> dict[str, Any] | None:
            found = await endpoint(api, made["id"])
            return found if found["status"] == "parked" else None

        found = await eventually(parked)
        assert found["failures"] == 3
        assert found["reason"] == "parked after 3 failed attempts in a row; the last: HTTP 503"
        assert found["position"] == first["position"] - 1  # nothing was accepted

        listed = (await api.get("/api/v1/endpoints")).body["endpoints"]
        assert [(e["id"], e["status"]) for e in listed] == [(made["id"], "parked")]

        receiver.answer_always("/flaky", 204)
        reply = await api.post(f"/api/v1/endpoints/{made['id']}/replay")
        assert reply.status == 200, reply.text
        assert reply.body["status"] == "active" and reply.body["failures"] == 0
        await eventually(lambda: _accepted_all_of(receiver, "/flaky", 2))
        assert [r.id for r in receiver.accepted("/flaky")] == [first["id"], second["id"]]
        # parked, no more attempts were made: between the third failure and the replay, none
        assert [r.status for r in receiver.at("/flaky")] == [503, 503, 503, 204, 204]

        # Replay from a position: delivered again from there, whatever was accepted before.
        reply = await api.post(
            f"/api/v1/endpoints/{made['id']}/replay", {"from_position": second["position"]}
        )
        assert reply.body["position"] == second["position"] - 1
        await eventually(lambda: _accepted_all_of(receiver, "/flaky", 3, unique=False))
        assert receiver.accepted("/flaky")[-1].id == second["id"]
        caught_up = await eventually(lambda: _at_position(api, made["id"], second["position"]))
        assert caught_up["reason"] is None and caught_up["next_attempt_at"] is None


async def _accepted_all_of(receiver: Receiver, path: str, n: int, *, unique: bool = True) -> bool:
    accepted = receiver.accepted(path)
    return len({r.id for r in accepted} if unique else accepted) >= n


async def _at_position(api: Any, endpoint_id: str, position: int) -> dict[str, Any] | None:
    found = await endpoint(api, endpoint_id)
    return found if found["position"] == position else None


async def test_a_restart_mid_backoff_loses_nothing(tmp_path: Path, receiver: Receiver) -> None:
    receiver.script("/slow", (500, {}))
    settings = outbound_settings(tmp_path, endpoints_backoff_base=1.5, endpoints_backoff_cap=1.5)
    async with gateway(settings) as api:
        made = await register(api, receiver.url("/slow"), kinds=["message"])
        thread = await api.thread(ALICE, BO)
        said = [await api.say(thread["id"], ALICE, f"m{i}") for i in range(3)]
        await eventually(lambda: _got(receiver, "/slow", 1))

        async def backing_off() -> dict[str, Any] | None:
            found = await endpoint(api, made["id"])
            return found if found["next_attempt_at"] else None

        found = await eventually(backing_off)
        assert found["failures"] == 1 and found["reason"] == "attempt 1 failed: HTTP 500"
    # Stopped during the backoff: nothing was accepted yet.
    assert receiver.accepted("/slow") == []

    async with gateway(settings) as api:  # the same SQLite file, started again
        await eventually(lambda: _accepted_all_of(receiver, "/slow", 3))
        assert [r.id for r in receiver.accepted("/slow")] == [e["id"] for e in said]
        assert [r.id for r in receiver.at("/slow")][:2] == [said[0]["id"]] * 2
        final = await eventually(lambda: _at_position(api, made["id"], said[-1]["position"]))
        assert final["failures"] == 0


async def _got(receiver: Receiver, path: str, n: int) -> bool:
    return len(receiver.at(path)) >= n


async def test_kinds_roles_and_threads_choose_what_is_delivered(
    tmp_path: Path, receiver: Receiver
) -> None:
    async with gateway(outbound_settings(tmp_path)) as api:
        people = await api.thread(ALICE, BO)
        with_echo = await api.thread(ALICE, "role:echo")
        tasks_only = await register(api, receiver.url("/tasks"), kinds=["task"])
        echo_only = await register(api, receiver.url("/echo"), roles=["echo"], kinds=["message"])
        one_thread = await register(api, receiver.url("/thread"), threads=[people["id"]])
        everything = await register(api, receiver.url("/all"))

        await api.say(people["id"], ALICE, "between people")
        await api.say(with_echo["id"], ALICE, "hello echo")
        created = await api.post(
            "/api/v1/tasks", {"author": ALICE, "title": "Fix it", "assignee": "echo"}
        )
        assert created.status == 201, created.text
        await api.post(
            f"/api/v1/tasks/{created.body['id']}/comments", {"author": ALICE, "text": "soon"}
        )
        # everything: 3 messages (the echo's reply too) and 2 task events
        await eventually(lambda: _accepted_all_of(receiver, "/all", 5))
        await eventually(lambda: _accepted_all_of(receiver, "/echo", 2))
        await eventually(lambda: _accepted_all_of(receiver, "/tasks", 2))
        await eventually(lambda: _accepted_all_of(receiver, "/thread", 1))
        # what each endpoint wants next, after the above: once it arrived, nothing came between
        await api.say(people["id"], ALICE, "marker")
        await api.say(with_echo["id"], ALICE, "marker")
        await api.post(
            f"/api/v1/tasks/{created.body['id']}/comments", {"author": ALICE, "text": "marker"}
        )
        await eventually(lambda: _accepted_all_of(receiver, "/all", 9), what="/all's markers")
        await eventually(lambda: _accepted_all_of(receiver, "/echo", 4), what="/echo's markers")
        await eventually(lambda: _accepted_all_of(receiver, "/tasks", 3), what="/tasks' marker")
        await eventually(lambda: _accepted_all_of(receiver, "/thread", 2), what="/thread's marker")

    def kinds(path: str, secret: str) -> list[str]:
        return [_verified(secret, r)["type"] for r in receiver.accepted(path)]

    def texts(path: str) -> list[str]:
        return [json.loads(r.body)["data"]["text"] for r in receiver.accepted(path)]

    commented = ["task.commented"] * 2
    assert kinds("/tasks", tasks_only["secret"]) == ["task.created", *commented]
    # the person's and the echo's, then the markers
    assert texts("/echo") == ["hello echo", "hello echo", "marker", "marker"]
    assert kinds("/thread", one_thread["secret"]) == ["timeline.message"] * 2
    assert texts("/thread") == ["between people", "marker"]
    assert sorted(kinds("/all", everything["secret"])) == sorted(
        ["timeline.message"] * (3 + 3) + ["task.created", *commented]
    )
    # The two streams are each in their own order; task events carry their task event JSON.
    task_events = [json.loads(r.body)["data"] for r in receiver.accepted("/tasks")]
    assert [e["seq"] for e in task_events] == [1, 2, 3]
    assert task_events[0]["task_id"] == created.body["id"]
    assert echo_only["roles"] == ["echo"] and one_thread["threads"] == [people["id"]]


async def test_a_new_endpoint_starts_with_what_comes_next_unless_told(
    tmp_path: Path, receiver: Receiver
) -> None:
    async with gateway(outbound_settings(tmp_path)) as api:
        thread = await api.thread(ALICE, BO)
        before = await api.say(thread["id"], ALICE, "before")
        await register(api, receiver.url("/next"), kinds=["message"])
        await register(
            api, receiver.url("/past"), kinds=["message"], from_position=before["position"]
        )
        after = await api.say(thread["id"], ALICE, "after")
        await eventually(lambda: _accepted_all_of(receiver, "/past", 2))
        await eventually(lambda: _accepted_all_of(receiver, "/next", 1))
        marker = await api.say(thread["id"], ALICE, "marker")  # what both want next
        await eventually(lambda: _accepted_all_of(receiver, "/past", 3), what="/past's marker")
        await eventually(lambda: _accepted_all_of(receiver, "/next", 2), what="/next's marker")
    assert [r.id for r in receiver.accepted("/next")] == [after["id"], marker["id"]]
    assert [r.id for r in receiver.accepted("/past")] == [before["id"], after["id"], marker["id"]]
