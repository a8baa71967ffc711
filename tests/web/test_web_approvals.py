"""Approvals in the widget over real HTTP (docs/widget.md, "Approvals"): a request reaches the
stream as a card, the person answers it with `POST /widget/v1/approvals/{id}` and the resolution
follows on the stream; the first answer from any channel wins and a later one is told how it
was resolved, and by whom; an approval of another conversation is an unknown one; history shows
each request with its state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from channels.edge.requests import DATABASE_KEY
from core.model.errors import InvalidInput
from core.model.participants import Address
from core.model.timeline import ApprovalRequested, EventId, ThreadId
from core.storage.database import Database
from tests.approvals import REJECT, restart_request
from tests.web.conftest import SHOP_ORIGIN, Web, Widget, user_token

ROLE = Address("role:slow")  # it answers no message: the timeline holds what the test does


def _db(web: Web) -> Database:
    return web.server.app[DATABASE_KEY]


async def _ask(
    web: Web,
    session: dict[str, Any],
    *,
    title: str = "Restart the web service?",
    approvers: tuple[Address, ...] = (),
    expires_in: timedelta = timedelta(minutes=10),
) -> ApprovalRequested:
    """The role asks in the session's conversation, as its run would."""
    asked = restart_request(
        title=title,
        description="It answers **502** since 10:02.",
        approvers=approvers,
        expires_in=expires_in,
    )
    return await _db(web).approvals.request(ThreadId(session["conversation"]), "run1", ROLE, asked)


async def _answer(widget: Widget, approval_id: str, body: Any) -> tuple[int, Any]:
    status, answer, _ = await widget.call("POST", f"/approvals/{approval_id}", body)
    return status, answer


async def _signed_in(web: Web, sub: str, name: str) -> tuple[Widget, dict[str, Any]]:
    widget = web.widget(SHOP_ORIGIN)
    session = await widget.start(role="slow", site="shop", user_token=user_token(sub, name))
    return widget, session


async def test_a_request_comes_down_the_stream_and_an_answer_resolves_it(web: Web) -> None:
    widget, session = await _signed_in(web, "u-1", "Ann Lee")
    stream = await widget.stream(after=session["last_seq"])
    try:
        asked = await _ask(web, session)
        [card] = await stream.timeline(1)
        assert card.id == str(asked.seq)
        assert card.data == {
            "id": asked.id,
            "seq": asked.seq,
            "at": card.data["at"],
            "kind": "approval_requested",
            "author": "role:slow",
            "author_name": "Slow",
            "mine": False,
            "title": "Restart the web service?",
            "description": "It answers **502** since 10:02.",
            "options": [
                {"id": "allow", "label": "Allow once", "kind": "allow_once"},
                {"id": "reject", "label": "Reject", "kind": "reject_once"},
            ],
            "tool": {"name": "execute", "arguments": {"command": "systemctl restart web"}},
            "approvers": [],
            "can_answer": True,
            "expires_at": card.data["expires_at"],
            "state": "pending",
            "resolution": None,
        }
        assert card.data["expires_at"].endswith("Z")

        status, answer, headers = await widget.call(
            "POST", f"/approvals/{asked.id}", {"option": "allow"}
        )
        assert status == 200, answer
        assert headers["Access-Control-Allow-Origin"] == SHOP_ORIGIN
        shown = answer["event"]
        assert shown["kind"] == "approval_resolved" and shown["target"] == asked.id
        assert (shown["outcome"], shown["option"]["label"], shown["channel"]) == (
            "answered",
            "Allow once",
            "web",
        )
        assert (shown["by"], shown["by_name"], shown["mine"]) == (
            f"person:{session['person']['slug']}",
            "Ann Lee",
            True,
        )
        [resolved] = await stream.timeline(1)
        assert resolved.data == shown
    finally:
        stream.response.close()
    _, resolution = await _db(web).approvals.get(asked.id)
    assert resolution is not None and resolution.channel == "web"


async def test_a_later_answer_is_refused_saying_who_answered_where(web: Web) -> None:
    widget, session = await _signed_in(web, "u-2", "Bo")
    person = Address(f"person:{session['person']['slug']}")
    asked = await _ask(web, session)
    await _db(web).approvals.answer(asked, person, "reject", channel="slack")

    status, answer, headers = await widget.call(
        "POST", f"/approvals/{asked.id}", {"option": "allow"}
    )
    assert status == 409, answer
    assert headers["Access-Control-Allow-Origin"] == SHOP_ORIGIN  # the page reads why
    assert answer["error"] == {
        "code": "approval_closed",
        "message": "Already answered by you in Slack: “Reject”.",
    }
    _, resolution = await _db(web).approvals.get(asked.id)
    assert resolution is not None and resolution.option == REJECT  # the first answer stands

    again = await _ask(web, session, title="Deploy?")
    assert (await _answer(widget, again.id, {"option": "allow"}))[0] == 200
    status, answer = await _answer(widget, again.id, {"option": "reject"})
    assert (status, answer["error"]["message"]) == (409, "Already answered by you: “Allow once”.")


async def test_an_answer_after_the_expiry_records_it_expired_for_every_channel(web: Web) -> None:
    widget, session = await _signed_in(web, "u-3", "Cy")
    asked = await _ask(web, session, expires_in=timedelta(seconds=-1))  # its time has passed
    stream = await widget.stream(after=asked.seq)
    try:
        status, answer = await _answer(widget, asked.id, {"option": "allow"})
        assert (status, answer["error"]) == (
            409,
            {
                "code": "approval_closed",
                "message": "This request expired before anyone answered it.",
            },
        )
        [expired] = await stream.timeline(1)
        assert expired.data["kind"] == "approval_resolved" and expired.data["target"] == asked.id
        assert (expired.data["outcome"], expired.data["by"], expired.data["option"]) == (
            "expired",
            None,
            None,
        )
    finally:
        stream.response.close()
    status, answer = await _answer(widget, asked.id, {"option": "allow"})
    assert (status, answer["error"]["code"]) == (409, "approval_closed")


async def test_what_is_not_an_answer_is_refused_and_nothing_changes(web: Web) -> None:
    widget, session = await _signed_in(web, "u-4", "Di")
    asked = await _ask(web, session)
    refusals = [
        ({"option": "maybe"}, 422, "unknown_option"),
        ({"option": 1}, 422, "unknown_option"),
        ({}, 422, "missing_field"),
        ({"option": "allow", "note": "x"}, 422, "unknown_field"),
        ({"option": "allow\x00"}, 422, "nul_character"),
    ]
    for body, status, code in refusals:
        got, answer = await _answer(widget, asked.id, body)
        assert (got, answer["error"]["code"]) == (status, code), body
    status, answer = await _answer(web.widget(SHOP_ORIGIN), asked.id, {"option": "allow"})
    assert (status, answer["error"]["code"]) == (401, "invalid_session"), answer
    status, answer = await _answer(widget, "0" * 32, {"option": "allow"})
    assert (status, answer["error"]["code"]) == (404, "approval_not_found")
    _, resolution = await _db(web).approvals.get(asked.id)
    assert resolution is None


async def test_an_approval_of_another_conversation_is_unknown_and_stays_pending(web: Web) -> None:
    ann, ann_session = await _signed_in(web, "u-5", "Ann")
    bo, bo_session = await _signed_in(web, "u-6", "Bo")
    theirs = await _ask(web, bo_session)
    status, answer = await _answer(ann, theirs.id, {"option": "allow"})
    unknown, unknown_answer = await _answer(ann, "f" * 32, {"option": "allow"})
    assert (status, answer["error"]["code"]) == (unknown, unknown_answer["error"]["code"])
    assert (status, answer["error"]["code"]) == (404, "approval_not_found")
    assert answer["error"]["message"] == unknown_answer["error"]["message"].replace(
        "f" * 32, theirs.id
    )  # the same words: nothing tells it apart from an id nobody has
    assert theirs.title not in answer["error"]["message"]
    _, resolution = await _db(web).approvals.get(theirs.id)
    assert resolution is None
    assert (await _answer(bo, theirs.id, {"option": "reject"}))[0] == 200
    del ann_session


async def test_a_request_names_members_as_approvers_and_they_answer(web: Web) -> None:
    """A widget conversation has one person: the approvers a request may name are that person
    (someone outside the conversation is refused when the request is made)."""
    widget, session = await _signed_in(web, "u-7", "Ed")
    person = Address(f"person:{session['person']['slug']}")
    with pytest.raises(InvalidInput) as refused:
        await _ask(web, session, approvers=(Address("person:someone-else"),))
    assert refused.value.code == "invalid_approvers"
    asked = await _ask(web, session, approvers=(person,))
    [card] = [e for e in (await widget.history())["events"] if e["id"] == asked.id]
    assert card["can_answer"] is True
    assert [a["address"] for a in card["approvers"]] == [person]
    status, _ = await _answer(widget, asked.id, {"option": "allow"})
    assert status == 200


async def test_history_shows_each_request_with_its_state(web: Web) -> None:
    widget, session = await _signed_in(web, "u-8", "Flo")
    person = Address(f"person:{session['person']['slug']}")
    db = _db(web)
    answered = await _ask(web, session, title="Restart?")
    await db.approvals.answer(answered, person, "allow", channel="slack")
    cancelled = await _ask(web, session, title="Roll back?")
    await db.approvals.cancel(EventId(cancelled.id), ThreadId(session["conversation"]))
    pending = await _ask(web, session, title="Page the on-call?")
    await widget.say("and then?")

    page = await widget.history()
    cards = {e["title"]: e for e in page["events"] if e["kind"] == "approval_requested"}
    assert {title: card["state"] for title, card in cards.items()} == {
        "Restart?": "answered",
        "Roll back?": "cancelled",
        "Page the on-call?": "pending",
    }
    resolution = cards["Restart?"]["resolution"]
    assert (resolution["option"]["label"], resolution["by_name"], resolution["channel"]) == (
        "Allow once",
        "Flo",
        "slack",
    )
    assert resolution["mine"] is True and resolution["target"] == answered.id
    assert cards["Roll back?"]["resolution"]["outcome"] == "cancelled"
    assert cards["Page the on-call?"]["resolution"] is None
    kinds = [e["kind"] for e in page["events"]]
    assert kinds.count("approval_resolved") == 2  # the resolutions are events of their own too

    # A page holding the request but not its resolution (which is newer) shows the state all the
    # same: the widget pages back after it has seen the resolution.
    older = await widget.history(f"?before={answered.seq + 1}")
    [alone] = [e for e in older["events"] if e["kind"] == "approval_requested"]
    assert (alone["id"], alone["state"]) == (answered.id, "answered")
    assert alone["resolution"]["by_name"] == "Flo"
    del pending
