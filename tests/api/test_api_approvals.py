"""Approvals over HTTP: a thread's approvals listed (pending or all, filtered with `as`), one
approval read, and answered — the first valid answer wins, exactly once, and every later one is
told who answered what; whoever may not answer is refused; bad input is a 422, never a 5xx.

Approvals are asked as a role's run asks them, through storage (`db.approvals.request` on the
gateway's own database): no operator route asks. The role `ops` is not served, so nothing answers
in the conversation but the people.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from channels.edge.requests import DATABASE_KEY
from core.model.participants import Address
from core.model.timeline import ApprovalRequested, ThreadId
from tests.api.conftest import Api
from tests.approvals import restart_request

ALICE, BOB, CAROL, OPS = "person:alice", "person:bob", "person:carol", "role:ops"
RUN = "0" * 31 + "7"
ABSENT = "0" * 31 + "1"


@pytest.fixture
async def thread_id(api: Api) -> str:
    return str((await api.thread(ALICE, BOB, OPS))["id"])


async def ask(
    api: Api,
    thread_id: str,
    title: str = "Restart the web service?",
    *,
    approvers: tuple[str, ...] = (),
    expires_in: timedelta = timedelta(minutes=10),
) -> ApprovalRequested:
    """`ops` asks in the thread, as its run would through the tools."""
    assert api.server.app is not None
    return await api.server.app[DATABASE_KEY].approvals.request(
        ThreadId(thread_id),
        RUN,
        Address(OPS),
        restart_request(title=title, approvers=approvers, expires_in=expires_in),
    )


async def answer(api: Api, approval_id: str, body: Any) -> Any:
    return await api.post(f"/api/v1/approvals/{approval_id}", body)


async def listed(api: Api, thread_id: str, query: str = "") -> list[dict[str, Any]]:
    reply = await api.get(f"/api/v1/threads/{thread_id}/approvals{query}")
    assert reply.status == 200, reply.text
    assert set(reply.body) == {"approvals"}
    approvals: list[dict[str, Any]] = reply.body["approvals"]
    return approvals


# --- reading ------------------------------------------------------------------------------------


async def test_an_approval_reads_as_its_request_pending_until_answered(
    api: Api, thread_id: str
) -> None:
    asked = await ask(api, thread_id)
    reply = await api.get(f"/api/v1/approvals/{asked.id}")
    assert reply.status == 200, reply.text
    shown = reply.body
    assert shown["requested_at"].endswith("Z") and shown["expires_at"].endswith("Z")
    del shown["requested_at"], shown["expires_at"]
    assert shown == {
        "id": asked.id,
        "thread_id": thread_id,
        "seq": 1,
        "role": OPS,
        "run_id": RUN,
        "title": "Restart the web service?",
        "description": "It is answering 502s.",
        "options": [
            {"id": "allow", "label": "Allow once", "kind": "allow_once"},
            {"id": "reject", "label": "Reject", "kind": "reject_once"},
        ],
        "tool": {"name": "execute", "arguments": {"command": "systemctl restart web"}},
        "approvers": [],
        "state": "pending",
        "resolution": None,
    }
    (await api.get(f"/api/v1/approvals/{ABSENT}")).error(404, "approval_not_found")
    (await api.get(f"/api/v1/approvals/{asked.id}?x=1")).error(422, "unknown_parameter")


async def test_a_thread_lists_its_pending_approvals_or_all_of_them_oldest_first(
    api: Api, thread_id: str
) -> None:
    first = await ask(api, thread_id, "First?")
    second = await ask(api, thread_id, "Second?")
    third = await ask(api, thread_id, "Third?")
    assert (await answer(api, second.id, {"option": "allow", "as": ALICE})).status == 200

    pending = await listed(api, thread_id)
    assert [a["id"] for a in pending] == [first.id, third.id]
    assert await listed(api, thread_id, "?state=pending") == pending
    every = await listed(api, thread_id, "?state=all")
    assert [(a["title"], a["state"]) for a in every] == [
        ("First?", "pending"),
        ("Second?", "answered"),
        ("Third?", "pending"),
    ]
    assert every[1]["resolution"]["by"] == ALICE

    other = (await api.thread(CAROL, OPS))["id"]
    assert await listed(api, other, "?state=all") == []


async def test_listing_refuses_what_it_does_not_take(api: Api, thread_id: str) -> None:
    path = f"/api/v1/threads/{thread_id}/approvals"
    (await api.get(f"{path}?state=done")).error(422, "invalid_parameter")
    (await api.get(f"{path}?limit=5")).error(422, "unknown_parameter")
    (await api.get(f"{path}?state=all&state=pending")).error(422, "repeated_parameter")
    (await api.get(f"{path}?as=alice")).error(422, "invalid_address")
    (await api.get(f"{path}?as={CAROL}")).error(403, "not_a_member")
    (await api.get(f"/api/v1/threads/{ABSENT}/approvals")).error(404, "thread_not_found")
    (await api.get(f"/api/v1/threads/{ABSENT}/approvals?as={ALICE}")).error(404, "thread_not_found")
    (await api.get(path, token=None)).error(401, "unauthorized")


async def test_as_shows_only_what_that_participant_may_see(api: Api, thread_id: str) -> None:
    """Bob's blackout (removed, then added again) hides the approval asked while he was away —
    from his list as from his timeline; the others, and the operator, see all three."""
    before = await ask(api, thread_id, "Before?")
    await api.set_state(thread_id, BOB, "removed")
    away = await ask(api, thread_id, "While Bob was away?")
    await api.set_state(thread_id, BOB, "active")
    after = await ask(api, thread_id, "After?")

    assert [a["id"] for a in await listed(api, thread_id, f"?as={BOB}")] == [before.id, after.id]
    assert [a["id"] for a in await listed(api, thread_id, f"?as={BOB}&state=all")] == [
        before.id,
        after.id,
    ]
    everyone = [before.id, away.id, after.id]
    assert [a["id"] for a in await listed(api, thread_id, f"?as={ALICE}")] == everyone
    assert [a["id"] for a in await listed(api, thread_id, f"?as={OPS}")] == everyone
    assert [a["id"] for a in await listed(api, thread_id)] == everyone
    seen = await api.timeline(thread_id, f"?as={BOB}")
    assert away.id not in [e["id"] for e in seen["events"]]


# --- answering ----------------------------------------------------------------------------------


async def test_the_first_answer_resolves_the_approval(api: Api, thread_id: str) -> None:
    asked = await ask(api, thread_id)
    reply = await answer(api, asked.id, {"option": "allow", "as": ALICE, "channel": "slack"})
    assert reply.status == 200, reply.text
    assert "Location" not in reply.headers
    resolved = reply.body
    assert resolved["id"] == asked.id and resolved["state"] == "answered"
    resolution = resolved["resolution"]
    assert (resolution["outcome"], resolution["by"], resolution["channel"]) == (
        "answered",
        ALICE,
        "slack",
    )
    assert resolution["option"] == {"id": "allow", "label": "Allow once", "kind": "allow_once"}
    assert (await api.get(f"/api/v1/approvals/{asked.id}")).body == resolved
    assert await listed(api, thread_id) == []


async def test_the_channel_is_api_unless_given(api: Api, thread_id: str) -> None:
    first, second = await ask(api, thread_id), await ask(api, thread_id)
    plain = await answer(api, first.id, {"option": "reject", "as": BOB})
    assert plain.body["resolution"]["channel"] == "api"
    null = await answer(api, second.id, {"option": "reject", "as": BOB, "channel": None})
    assert null.body["resolution"]["channel"] == "api"


async def test_a_second_answer_is_refused_naming_who_answered_what(
    api: Api, thread_id: str
) -> None:
    asked = await ask(api, thread_id)
    assert (await answer(api, asked.id, {"option": "reject", "as": BOB})).status == 200
    message = (await answer(api, asked.id, {"option": "allow", "as": ALICE})).error(
        409, "approval_closed"
    )
    assert "'Reject'" in message and BOB in message
    # Even the winner's own answer, again: the approval is closed, nothing changes.
    (await answer(api, asked.id, {"option": "reject", "as": BOB})).error(409, "approval_closed")
    shown = (await api.get(f"/api/v1/approvals/{asked.id}")).body
    assert (shown["resolution"]["by"], shown["resolution"]["option"]["id"]) == (BOB, "reject")


async def test_of_two_answers_at_once_exactly_one_wins(api: Api, thread_id: str) -> None:
    asked = await ask(api, thread_id)
    replies = await asyncio.gather(
        answer(api, asked.id, {"option": "allow", "as": ALICE, "channel": "slack"}),
        answer(api, asked.id, {"option": "reject", "as": BOB, "channel": "web"}),
    )
    assert sorted(r.status for r in replies) == [200, 409]
    won = next(r for r in replies if r.status == 200).body["resolution"]
    lost = next(r for r in replies if r.status == 409)
    assert won["by"] in lost.error(409, "approval_closed")
    timeline = await api.timeline(thread_id)
    resolutions = [e for e in timeline["events"] if e["kind"] == "approval_resolved"]
    assert len(resolutions) == 1 and resolutions[0]["by"] == won["by"]


async def test_an_expired_approval_is_closed(api: Api, thread_id: str) -> None:
    asked = await ask(api, thread_id, expires_in=timedelta(seconds=-1))
    message = (await answer(api, asked.id, {"option": "allow", "as": ALICE})).error(
        409, "approval_closed"
    )
    assert "expired" in message
    # The refusal recorded what the approval's time said: every reader sees it expired now.
    assert (await api.get(f"/api/v1/approvals/{asked.id}")).body["state"] == "expired"


async def test_whoever_may_not_answer_is_refused_and_nothing_changes(
    api: Api, thread_id: str
) -> None:
    named = await ask(api, thread_id, approvers=(ALICE,))
    (await answer(api, named.id, {"option": "allow", "as": BOB})).error(403, "not_an_approver")
    (await answer(api, named.id, {"option": "allow", "as": OPS})).error(403, "not_an_approver")
    (await answer(api, named.id, {"option": "allow", "as": CAROL})).error(403, "not_a_member")
    anyone = await ask(api, thread_id)
    await api.set_state(thread_id, BOB, "removed")
    (await answer(api, anyone.id, {"option": "allow", "as": BOB})).error(403, "participant_removed")
    assert [a["state"] for a in await listed(api, thread_id, "?state=all")] == [
        "pending",
        "pending",
    ]
    assert (await answer(api, anyone.id, {"option": "allow", "as": ALICE})).status == 200


async def test_a_deactivated_persons_answer_is_refused(api: Api, thread_id: str) -> None:
    asked = await ask(api, thread_id)
    made = await api.post("/api/v1/persons", {"display_name": "Bob", "slug": "bob"})
    assert made.status in (201, 409), made.text  # (the conversation may have made Bob already)
    off = await api.call("PATCH", "/api/v1/persons/bob", json={"active": False})
    assert off.status == 200, off.text
    (await answer(api, asked.id, {"option": "allow", "as": BOB})).error(403, "person_deactivated")
    assert [a["state"] for a in await listed(api, thread_id, "?state=all")] == ["pending"]
    assert (await answer(api, asked.id, {"option": "allow", "as": ALICE})).status == 200


async def test_an_option_not_offered_is_refused_naming_the_options(
    api: Api, thread_id: str
) -> None:
    asked = await ask(api, thread_id)
    message = (await answer(api, asked.id, {"option": "maybe", "as": ALICE})).error(
        422, "unknown_option"
    )
    assert "allow" in message and "reject" in message
    (await answer(api, asked.id, {"option": 1, "as": ALICE})).error(422, "invalid_option")
    (await answer(api, asked.id, {"option": "", "as": ALICE})).error(422, "invalid_option")
    (await answer(api, ABSENT, {"option": "allow", "as": ALICE})).error(404, "approval_not_found")
    assert (await api.get(f"/api/v1/approvals/{asked.id}")).body["state"] == "pending"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"as": ALICE}, "missing_field"),
        ({"option": "allow"}, "missing_field"),
        ({"option": "allow", "as": ALICE, "by": BOB}, "unknown_field"),
        ({"option": "allow", "as": "alice"}, "invalid_address"),
        ({"option": "allow", "as": ["person:alice"]}, "invalid_address"),
        ({"option": "allow", "as": None}, "invalid_address"),
        ({"option": ["allow"], "as": ALICE}, "invalid_option"),
        ({"option": "allow", "as": ALICE, "channel": "Slack Web"}, "invalid_channel"),
        ({"option": "allow", "as": ALICE, "channel": 3}, "invalid_channel"),
        ({"option": "allow", "as": ALICE, "option\u0000": 1}, "unknown_field"),
        (["allow", ALICE], "invalid_body"),
        ("allow", "invalid_body"),
    ],
)
async def test_a_malformed_answer_is_422_and_changes_nothing(
    api: Api, thread_id: str, body: Any, code: str
) -> None:
    asked = await ask(api, thread_id)
    (await answer(api, asked.id, body)).error(422, code)
    (await answer(api, ABSENT, body)).error(422, code)  # the body is read before the approval
    assert (await api.get(f"/api/v1/approvals/{asked.id}")).body["state"] == "pending"


async def test_an_answer_that_is_not_json_or_takes_a_query_is_refused(
    api: Api, thread_id: str
) -> None:
    asked = await ask(api, thread_id)
    path = f"/api/v1/approvals/{asked.id}"
    headers = {"Content-Type": "application/json"}
    (await api.call("POST", path, data=b"{option", headers=headers)).error(400, "invalid_json")
    (await api.call("POST", path, data=b"", headers=headers)).error(400, "invalid_json")
    ok = {"option": "allow", "as": ALICE}
    (await api.call("POST", f"{path}?as={ALICE}", json=ok)).error(422, "unknown_parameter")
    (await api.call("PUT", path, json=ok)).error(405, "method_not_allowed")
    (await api.call("POST", path, json=ok, token=None)).error(401, "unauthorized")
    assert (await api.get(path)).body["state"] == "pending"


# --- the timeline -------------------------------------------------------------------------------


async def test_the_request_and_its_resolution_are_events_of_the_timeline(
    api: Api, thread_id: str
) -> None:
    asked = await ask(api, thread_id, approvers=(ALICE,))
    answered = await answer(api, asked.id, {"option": "allow", "as": ALICE, "channel": "web"})
    resolution = answered.body["resolution"]

    events = (await api.timeline(thread_id, f"?as={ALICE}"))["events"]
    assert [e["kind"] for e in events] == ["approval_requested", "approval_resolved"]
    requested, resolved = events
    assert requested["id"] == asked.id and requested["seq"] == 1
    assert requested["expires_at"] == answered.body["expires_at"]
    assert {k: requested[k] for k in ("author", "run_id", "title", "description", "approvers")} == {
        "author": OPS,
        "run_id": RUN,
        "title": "Restart the web service?",
        "description": "It is answering 502s.",
        "approvers": [ALICE],
    }
    assert requested["options"] == answered.body["options"]
    assert requested["tool"] == {
        "name": "execute",
        "arguments": {"command": "systemctl restart web"},
    }
    assert resolved["id"] == resolution["id"] and resolved["at"] == resolution["at"]
    assert {k: resolved[k] for k in ("seq", "target", "outcome", "option", "by", "channel")} == {
        "seq": 2,
        "target": asked.id,
        "outcome": "answered",
        "option": {"id": "allow", "label": "Allow once", "kind": "allow_once"},
        "by": ALICE,
        "channel": "web",
    }
    stream = (await api.get("/api/v1/events?after=0")).body["events"]
    assert [e["kind"] for e in stream if e["thread_id"] == thread_id] == [
        "approval_requested",
        "approval_resolved",
    ]
