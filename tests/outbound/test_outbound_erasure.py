"""A person's erasure reaches outbound endpoints as the timeline's `erased` event (docs/webhooks.md,
docs/privacy.md), on SQLite and PostgreSQL: an endpoint with the default kinds receives it,
signed like every event, after what it was sent before — which is not sent again; an endpoint that
reads the thread only after the erasure receives the messages as the tombstones they are now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from standardwebhooks import Webhook

from tests.outbound.conftest import Receiver, gateway, outbound_settings, register
from tests.waiting import eventually

ALICE = "person:alice"


def _received(receiver: Receiver, path: str, secret: str) -> list[dict[str, Any]]:
    return [Webhook(secret).verify(r.body, r.headers) for r in receiver.accepted(path)]


async def test_an_endpoint_receives_erased_after_what_it_was_sent(
    tmp_path: Path, receiver: Receiver, database_url: str
) -> None:
    async with gateway(outbound_settings(tmp_path, database_url=database_url)) as api:
        made = await api.post("/api/v1/persons", {"slug": "alice", "display_name": "Alice"})
        assert made.status == 201, made.text
        every = await register(api, receiver.url("/every"))  # the default kinds
        assert "erased" in every["kinds"]
        thread = await api.thread(ALICE, "role:echo")
        said = await api.say(thread["id"], ALICE, "my locker is 42")

        def both() -> bool:
            got = _received(receiver, "/every", every["secret"])
            return len([e for e in got if e["type"] == "timeline.message"]) >= 2

        await eventually(both, what="her message and its answer sent")

        erased = await api.call("DELETE", "/api/v1/persons/alice?erase=true")
        assert erased.status == 200, erased.text

        def erasure() -> dict[str, Any] | None:
            got = _received(receiver, "/every", every["secret"])
            return next((e for e in got if e["type"] == "timeline.erased"), None)

        event = await eventually(erasure, what="the erased event sent")
        data = event["data"]
        assert (data["kind"], data["thread_id"], data["participant"]) == (
            "erased",
            thread["id"],
            ALICE,
        )
        assert data["messages"] == 2

        # Reading the thread from its start now, another endpoint gets the tombstones.
        later = await register(api, receiver.url("/later"), from_position=1)

        def read_through() -> list[dict[str, Any]] | None:
            got = _received(receiver, "/later", later["secret"])
            return got if any(e["type"] == "timeline.erased" for e in got) else None

        replayed = [e["data"] for e in await eventually(read_through, what="the thread replayed")]

    sent = [r.id for r in receiver.accepted("/every")]
    assert len(sent) == len(set(sent))  # nothing was sent twice: the messages stay as they went
    got = _received(receiver, "/every", every["secret"])
    messages = [e["data"] for e in got if e["type"] == "timeline.message"]
    assert [(m["id"], m["text"], m["erased"]) for m in messages][:1] == [
        (said["id"], "my locker is 42", False)
    ]
    types = [e["type"] for e in got]
    assert types.index("timeline.erased") > max(
        n for n, kind in enumerate(types) if kind == "timeline.message"
    )
    tombstones = [e for e in replayed if e["kind"] == "message"]
    assert [(m["text"], m["erased"], m["context"]) for m in tombstones] == [("", True, None)] * 2
    assert tombstones[0]["id"] == said["id"]
