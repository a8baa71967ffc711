"""Resume: the stream is cut mid-conversation — the network between browser and gateway fails,
then the gateway itself stops — while messages keep being written, and the widget catches up with
no duplicate and no gap.

The check is exact: the messages rendered, top to bottom, are the messages the person may see in
the gateway's timeline, seq for seq.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Relay, Widget
from tests.serving import free_port
from tests.waiting import eventually

ANN = "/page?role=echo&user=ann-1&name=Ann+Example"
RECONNECTING = "Connection lost — reconnecting…"


@pytest.fixture
async def relay(gateway: Gateway) -> AsyncIterator[Relay]:
    """The network between the browser and the gateway, to cut."""
    relay = Relay(gateway.settings.port)
    await relay.start()
    try:
        yield relay
    finally:
        await relay.close()


async def say_and_await_echo(gateway: Gateway, thread: str, person: str, text: str) -> None:
    """Post as another channel would, and wait for echo's reply (so the order is known)."""
    await gateway.say(thread, person, text)

    async def echoed() -> bool:
        messages = await gateway.messages(thread, person)
        return bool(messages[-1]["text"] == text and messages[-1]["author"] == "role:echo")

    await eventually(echoed)


async def test_the_widget_catches_up_after_a_dropped_stream_and_a_gateway_restart(
    gateway: Gateway, shop: str, relay: Relay, open_page: OpenPage
) -> None:
    page = await open_page(f"{shop}{ANN}&gateway={relay.url}")
    widget = Widget(page, "Echo")
    await widget.send("one")
    await expect(widget.texts).to_have_text(["one", "one"])
    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    thread, person = session["conversation"], f"person:{session['person']['slug']}"

    # The network fails mid-stream and stays down while a message is written; then it is back.
    relay.down = True
    relay.cut()
    await expect(widget.error).to_have_text(RECONNECTING)
    await say_and_await_echo(gateway, thread, person, "while the network is down")
    relay.down = False
    await expect(widget.texts).to_have_text(["one", "one"] + ["while the network is down"] * 2)
    await expect(widget.error).to_be_hidden()

    # The gateway stops (the stream dies with it); a stand-in on another port, on the same
    # database, takes two messages and their replies; then the gateway starts again.
    await gateway.stop()
    await expect(widget.error).to_have_text(RECONNECTING)
    await gateway.start(port=free_port())
    await say_and_await_echo(gateway, thread, person, "while down 1")
    await say_and_await_echo(gateway, thread, person, "while down 2")
    await gateway.stop()
    await gateway.start()

    caught_up = (
        ["one", "one"]
        + ["while the network is down"] * 2
        + ["while down 1"] * 2
        + ["while down 2"] * 2
    )
    await expect(widget.texts).to_have_text(caught_up, timeout=20_000)
    await widget.send("after the restart")
    await expect(widget.texts).to_have_text([*caught_up, "after the restart", "after the restart"])
    await expect(widget.error).to_be_hidden()

    timeline: list[dict[str, Any]] = await gateway.messages(thread, person)
    assert [message["text"] for message in timeline] == await widget.texts.all_inner_texts()
    assert await widget.shown_seqs() == [message["seq"] for message in timeline]
