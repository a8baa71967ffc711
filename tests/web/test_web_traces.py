"""A widget message is one trace too (docs/tracing.md): its POST, its commit, the nudge, the echo's
turn and the reply's commit, and each frame the widget's live stream sends — the person's own
message under the POST's commit, the echo under the reply's — over real HTTP, the gateway
tracing with an in-memory exporter."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN, Api
from tests.serving import free_port, serve
from tests.spans import Recorded, hex_id
from tests.waiting import eventually
from tests.web.conftest import Widget, web_settings


async def test_a_widget_message_its_echo_and_their_stream_frames_are_one_trace(
    tmp_path: Path, recorded: Recorded
) -> None:
    port = free_port()
    app = build_app(
        web_settings(tmp_path, port),
        api_token=TOKEN,
        roles={"echo": ECHO},
        tracer_provider=recorded.provider,
    )
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        widget = Widget(server, http, None)
        started = await widget.start()
        stream = await widget.stream(after=started["last_seq"])
        try:
            await widget.say("hello there")
            mine, echo = await stream.timeline(2)
        finally:
            stream.response.close()
        api = Api(server, http)
        [run] = (await api.get(f"/api/v1/runs?thread={started['conversation']}")).body["runs"]
        turns = await eventually(lambda: _turns(api, run["id"]), what="the echo's turn recorded")

    post = recorded.one("POST /widget/v1/messages")
    assert post.parent is None
    [said] = recorded.children(post, "rolecall.commit")
    [nudge] = recorded.children(said, "rolecall.nudge")
    [turn] = recorded.children(nudge, "rolecall.turn")
    [reply] = recorded.children(turn, "rolecall.commit")
    [own_frame] = recorded.children(said, "rolecall.widget.stream")
    [echo_frame] = recorded.children(reply, "rolecall.widget.stream")
    assert own_frame.attributes is not None and echo_frame.attributes is not None
    assert own_frame.attributes["rolecall.event_id"] == mine.data["id"]
    assert echo_frame.attributes["rolecall.event_id"] == echo.data["id"]
    assert {s.context.trace_id for s in (said, turn, own_frame, echo_frame)} == {
        post.context.trace_id
    }
    assert turns[0]["trace_id"] == hex_id(post)


async def _turns(api: Api, run_id: str) -> list[dict[str, object]]:
    turns: list[dict[str, object]] = (await api.get(f"/api/v1/runs/{run_id}/turns")).body["turns"]
    return turns
