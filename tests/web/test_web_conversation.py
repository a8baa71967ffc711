"""The widget's conversation over real HTTP: a message goes up by POST and the role's reply
comes down the Server-Sent Events stream; history pages back and keeps what "start fresh"
archived behind `earlier`; retractions and messages from other channels arrive live; a
reconnect with `Last-Event-ID` replays exactly what was missed, across a gateway restart too;
posting is limited per identity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.serving import free_port, serve
from tests.web.conftest import Sse, Web, Widget, web_settings


def _texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["kind"] == "message"]


def _seq(event: Sse) -> int:
    """The seq a timeline event of the stream carries as its id."""
    assert event.id is not None, event
    return int(event.id)


async def test_a_message_goes_up_and_the_reply_comes_down_the_stream(web: Web) -> None:
    widget = web.widget()
    started = await widget.start()
    stream = await widget.stream(after=started["last_seq"])
    try:
        sent = await widget.say("hello there")
        assert sent["mine"] and sent["channel"] == "web" and sent["author_name"] == "Visitor"
        mine, reply = await stream.timeline(2)
        async with web.http.get(web.server.make_url("/metrics")) as metrics:
            assert "rolecall_widget_streams 1.0" in await metrics.text()
        assert (mine.data["text"], mine.data["mine"]) == ("hello there", True)
        assert mine.id == str(mine.data["seq"])
        assert reply.data["author"] == "role:echo" and reply.data["author_name"] == "Echo"
        assert (reply.data["text"], reply.data["mine"], reply.data["channel"]) == (
            "hello there",
            False,
            None,
        )
        while (last := await stream.next()).event != "working":
            pass
        assert last.data == {"role": "echo", "working": False}
        assert stream.events[0].event == "ready"
        order = [(e.event, e.data.get("working", e.data.get("text"))) for e in stream.events[1:]]
        assert order == [
            ("timeline", "hello there"),
            ("working", True),  # the turn started ...
            ("timeline", "hello there"),  # ... the reply ...
            ("working", False),  # ... and the turn is over
        ]
    finally:
        stream.response.close()


async def test_history_pages_back_oldest_first_within_a_page(web: Web) -> None:
    widget = web.widget()
    await widget.start(role="slow")  # no replies: exactly what is said
    for n in range(5):
        await widget.say(f"m{n}")
    newest = await widget.history("?limit=2")
    assert _texts(newest["events"]) == ["m3", "m4"] and newest["more"]
    older = await widget.history(f"?limit=2&before={newest['events'][0]['seq']}")
    assert _texts(older["events"]) == ["m1", "m2"] and older["more"]
    oldest = await widget.history(f"?limit=2&before={older['events'][0]['seq']}")
    assert _texts(oldest["events"]) == ["m0"] and not oldest["more"] and not oldest["earlier"]


async def test_start_fresh_archives_what_came_before_behind_earlier(web: Web) -> None:
    widget = web.widget()
    started = await widget.start(role="slow")
    await widget.say("before fresh")
    stream = await widget.stream(after=started["last_seq"])
    try:
        status, fresh, _ = await widget.call("POST", "/fresh", {})
        assert status == 200, fresh
        [mine, marker] = await stream.timeline(2)
        assert mine.data["text"] == "before fresh"
        assert marker.data["kind"] == "system" and marker.data["fresh"] is True
        assert marker.data["archive_before"] == fresh["archive_before"]
    finally:
        stream.response.close()
    await widget.say("after fresh")
    page = await widget.history()
    assert _texts(page["events"]) == ["after fresh"] and page["earlier"] and not page["more"]
    archived = await widget.history(f"?archived=true&before={page['events'][0]['seq']}")
    assert "before fresh" in _texts(archived["events"])


async def test_retractions_and_other_channels_arrive_live(web: Web) -> None:
    widget = web.widget()
    started = await widget.start(role="slow")
    person = f"person:{started['person']['slug']}"
    stream = await widget.stream(after=started["last_seq"])
    try:
        said = await web.api.post(
            f"/api/v1/threads/{started['conversation']}/messages",
            {"author": person, "text": "<img src=x onerror=alert(1)>", "channel": "slack"},
        )
        assert said.status == 201, said.text
        [elsewhere] = await stream.timeline(1)
        assert elsewhere.data["channel"] == "slack" and elsewhere.data["mine"]
        assert elsewhere.data["text"] == "<img src=x onerror=alert(1)>"  # text, as written
        gone = await web.api.post(
            f"/api/v1/threads/{started['conversation']}/messages/{said.body['id']}/retract",
            {"author": person},
        )
        assert gone.status in (200, 201), gone.text
        [retraction] = await stream.timeline(1)
        assert retraction.data["kind"] == "retraction"
        assert retraction.data["target"] == said.body["id"]
    finally:
        stream.response.close()
    [shown] = [e for e in (await widget.history())["events"] if e["kind"] == "message"]
    assert shown["retracted"] is True


async def test_a_reconnect_with_last_event_id_replays_exactly_what_was_missed(web: Web) -> None:
    widget = web.widget()
    started = await widget.start(role="slow")
    stream = await widget.stream(after=started["last_seq"])
    await widget.say("one")
    [first] = await stream.timeline(1)
    stream.response.close()  # the connection drops
    for text in ("two", "three"):
        await widget.say(text)
    again = await widget.stream(last_event_id=first.id)
    try:
        await widget.say("four")
        got = await again.timeline(3)
        assert [e.data["text"] for e in got] == ["two", "three", "four"]
        seqs = [_seq(e) for e in got]
        assert seqs == sorted(set(seqs)) and seqs[0] > _seq(first)
    finally:
        again.response.close()


async def test_the_stream_resumes_across_a_gateway_restart(tmp_path: Path) -> None:
    port = free_port()
    settings = web_settings(tmp_path, port)
    roles = {"echo": ECHO}
    async with aiohttp.ClientSession() as http:
        async with serve(build_app(settings, api_token=TOKEN, roles=roles), port=port) as server:
            widget = Widget(server, http, None)
            started = await widget.start()
            stream = await widget.stream(after=started["last_seq"])
            await widget.say("before the restart")
            got = await stream.timeline(2)  # the message and echo's reply
        # the gateway stopped: the stream ended
        stream.response.close()

        async with serve(build_app(settings, api_token=TOKEN, roles=roles), port=port) as again:
            widget.server = again
            await Api(again, http).say(
                started["conversation"], f"person:{started['person']['slug']}", "while away"
            )
            resumed = await widget.stream(last_event_id=got[-1].id)
            rest = await resumed.timeline(2)  # the message said while away, and its reply
            texts = [e.data["text"] for e in got + rest]
            assert texts == ["before the restart"] * 2 + ["while away"] * 2
            seqs = [_seq(e) for e in got + rest]
            assert seqs == list(range(seqs[0], seqs[0] + 4))  # no gap, no duplicate
            resumed.response.close()


async def test_posting_is_limited_per_identity_and_by_size(web: Web) -> None:
    widget = web.widget()
    await widget.start(role="slow")
    statuses = []
    for n in range(12):
        status, answer, headers = await widget.call("POST", "/messages", {"text": f"n{n}"})
        statuses.append(status)
        if status == 429:
            assert answer["error"]["code"] == "rate_limited"
            assert int(headers["Retry-After"]) >= 1
    assert statuses[:10] == [201] * 10 and 429 in statuses[10:]
    other = web.widget()
    await other.start(role="slow")
    status, answer, _ = await other.call("POST", "/messages", {"text": "x" * 4001})
    assert status == 413 and answer["error"]["code"] == "too_large"
    assert (await other.call("POST", "/messages", {"text": "fine"}))[0] == 201


async def test_a_session_token_is_needed_and_checked(web: Web) -> None:
    widget = web.widget()
    status, answer, _ = await widget.call("GET", "/history")
    assert status == 401 and answer["error"]["code"] == "invalid_session"
    widget.session = {"session_token": "nonsense"}
    status, answer, _ = await widget.call("POST", "/messages", {"text": "hi"})
    assert status == 401 and answer["error"]["code"] == "invalid_session"


async def test_a_deactivated_person_can_no_longer_post(web: Web) -> None:
    widget = web.widget()
    started = await widget.start(role="slow")
    slug = started["person"]["slug"]
    off = await web.api.call("PATCH", f"/api/v1/persons/{slug}", json={"active": False})
    assert off.status == 200, off.text
    status, answer, _ = await widget.call("POST", "/messages", {"text": "hi"})
    assert status == 403 and answer["error"]["code"] == "person_deactivated"
