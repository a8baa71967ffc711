"""Turn and delivery latency histograms from spans (docs/tracing.md, `gateway.span_metrics`): a
widget message and the echo's reply, over real HTTP with tracing on, are one more observation of
`rolecall_turn_seconds{role="echo"}` and one per frame the live stream sent of
`rolecall_delivery_seconds{channel="widget"}`, read from `GET /metrics`; with tracing off, the
histograms are not there at all."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN
from tests.serving import free_port, serve
from tests.spans import Recorded
from tests.waiting import eventually
from tests.web.conftest import Widget, web_settings

Counts = dict[tuple[str, str], float]
"""Observations so far, by histogram and label value."""


async def test_a_message_and_its_echo_are_observed_as_one_turn_and_their_frames(
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
        before = await _counts(server, http)
        stream = await widget.stream(after=started["last_seq"])
        try:
            await widget.say("hello there")
            await stream.timeline(2)  # the person's message, then the echo
        finally:
            stream.response.close()

        async def turned() -> Counts | None:
            now = await _counts(server, http)
            return now if now[("turn", "echo")] > before[("turn", "echo")] else None

        after = await eventually(turned, what="the echo's turn observed")

    assert before[("turn", "echo")] == 0
    assert after[("turn", "echo")] == 1
    frames = recorded.named("rolecall.widget.stream")
    assert len(frames) == 2
    assert after[("delivery", "widget")] - before[("delivery", "widget")] == len(frames)
    assert after[("delivery", "slack")] == after[("delivery", "webhook")] == 0


async def test_with_tracing_off_the_span_histograms_are_absent(tmp_path: Path) -> None:
    port = free_port()
    app = build_app(web_settings(tmp_path, port), api_token=TOKEN, roles={"echo": ECHO})
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        text = await _metrics(server, http)

    assert "rolecall_turn_duration_seconds" in text  # the run host's, tracing or not
    assert "rolecall_turn_seconds" not in text
    assert "rolecall_delivery_seconds" not in text


async def _metrics(server: TestServer, http: aiohttp.ClientSession) -> str:
    async with http.get(server.make_url("/metrics")) as reply:
        assert reply.status == 200
        return await reply.text()


async def _counts(server: TestServer, http: aiohttp.ClientSession) -> Counts:
    counts: Counts = {("turn", "echo"): 0.0}
    for family in text_string_to_metric_families(await _metrics(server, http)):
        for sample in family.samples:
            if sample.name == "rolecall_turn_seconds_count":
                counts[("turn", sample.labels["role"])] = sample.value
            elif sample.name == "rolecall_delivery_seconds_count":
                counts[("delivery", sample.labels["channel"])] = sample.value
    return counts
