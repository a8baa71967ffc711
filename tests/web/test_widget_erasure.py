"""A widget session of an erased person is over (channels/web/routes.py, docs/widget.md), over
real HTTP on SQLite and PostgreSQL: the open stream sends the `erased` event and ends; every call
of the session answers 401 `session_expired` saying the conversation was erased; the same visitor
starting again is someone new, in a new and empty conversation. A tombstone shows as erased, with
no text, and a frame rendered before the erasure is not sent again after it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from channels.edge.requests import DATABASE_KEY
from channels.web.present import Frames, Names, widget_event
from core.model.participants import Address
from core.model.timeline import EventId, Message, ThreadId
from core.storage.database import Database
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.serving import free_port, serve
from tests.web.conftest import Web, Widget, web_settings

ERASED = "this conversation was erased"


@pytest.fixture
async def web_on(tmp_path: Path, database_url: str) -> AsyncIterator[Web]:
    """The gateway with its widget, on the `database_url` fixture's backend."""
    port = free_port()
    settings = web_settings(tmp_path, port, database_url=database_url)
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO})
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        yield Web(server, http, Api(server, http))


async def _erase(web: Web, slug: str) -> dict[str, Any]:
    reply = await web.api.call("DELETE", f"/api/v1/persons/{slug}?erase=true")
    assert reply.status == 200, reply.text
    erased: dict[str, Any] = reply.body
    return erased


async def _refused(widget: Widget, method: str, path: str, body: Any = None) -> None:
    status, answer, _ = await widget.call(method, path, body)
    assert status == 401, (path, answer)
    assert answer["error"]["code"] == "session_expired", (path, answer)
    assert answer["error"]["message"].startswith(ERASED), (path, answer)


async def test_an_erased_persons_widget_session_is_over_and_the_visitor_starts_anew(
    web_on: Web,
) -> None:
    widget = web_on.widget()
    started = await widget.start()
    slug, conversation = started["person"]["slug"], started["conversation"]
    stream = await widget.stream(after=started["last_seq"])
    try:
        await widget.say("my locker is 42")
        await stream.timeline(2)  # what she said, and the answer

        went = await _erase(web_on, slug)
        assert went["erased"]["messages"] == 2

        [erased] = await stream.timeline(1)
        assert erased.data["kind"] == "erased"
        assert (erased.data["participant"], erased.data["mine"]) == (f"person:{slug}", True)
        assert erased.data["messages"] == 2
        with pytest.raises(EOFError):  # the stream ended with it
            while True:
                await stream.next()
    finally:
        stream.response.close()

    await _refused(widget, "GET", "/history")
    await _refused(widget, "POST", "/messages", {"text": "hello?"})
    await _refused(widget, "POST", "/approvals/01a2000000000000000000000000abcd", {"option": "x"})
    await _refused(widget, "POST", "/fresh", {})
    await _refused(widget, "POST", "/link-codes", {})
    await _refused(widget, "POST", "/link", {"code": "ABCD-EFGH"})
    token = widget.session["session_token"]
    await _refused(widget, "GET", f"/stream?token={token}")

    # The same browser (its visitor token) starts again: someone new, in a new conversation.
    again = await widget.start(visitor_token=started["visitor_token"])
    assert again["person"]["slug"] != slug and again["conversation"] != conversation
    assert again["last_seq"] == 0
    assert (await widget.history())["events"] == []
    said = await widget.say("hello again")
    assert said["mine"] and said["text"] == "hello again"

    # What the operator reads of the old conversation: tombstones in their places, then `erased`.
    timeline = await web_on.api.timeline(conversation, "?include_archived=true")
    assert [(e["kind"], e.get("text"), e.get("erased")) for e in timeline["events"]][:3] == [
        ("message", "", True),
        ("message", "", True),
        ("erased", None, None),
    ]


async def test_a_tombstone_shows_as_erased_and_is_a_frame_of_its_own(web_on: Web) -> None:
    database: Database = web_on.server.app[DATABASE_KEY]
    names = Names(database, {"echo": ECHO})
    said = Message(
        id=EventId("01a2000000000000000000000000e001"),
        thread_id=ThreadId("01a2000000000000000000000000a001"),
        seq=3,
        position=30,
        at=datetime(2026, 12, 3, 10, 0, tzinfo=UTC),
        author=Address("role:echo"),
        text="your locker is 42",
        context=None,
    )
    tombstone = replace(said, text="", erased=True)
    viewer = Address("person:bob")
    shown = await widget_event(tombstone, viewer=viewer, names=names)
    assert shown is not None
    assert (shown["kind"], shown["text"], shown["erased"]) == ("message", "", True)
    assert (await widget_event(said, viewer=viewer, names=names) or {})["erased"] is False

    frames = Frames()
    before = await frames.of(said, viewer, names)
    after = await frames.of(tombstone, viewer, names)
    assert b"your locker is 42" in before and b"your locker is 42" not in after
    assert b'"erased": true' in after
