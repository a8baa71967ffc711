"""Approvals reach outbound endpoints like every timeline event: the request and its answer,
signed, in order, with the fields another system needs to follow a request and answer it
through the API."""

from __future__ import annotations

from pathlib import Path

from standardwebhooks import Webhook

from channels.edge.requests import DATABASE_KEY
from core.model.participants import Address
from core.model.timeline import ThreadId
from core.storage.database import Database
from tests.approvals import restart_request
from tests.outbound.conftest import Receiver, gateway, outbound_settings, register
from tests.waiting import eventually

ALICE = "person:alice"


async def test_an_endpoint_receives_the_request_and_its_answer(
    tmp_path: Path, receiver: Receiver
) -> None:
    async with gateway(outbound_settings(tmp_path)) as api:
        thread = await api.thread(ALICE, "role:echo")
        approvals = await register(
            api, receiver.url("/approvals"), kinds=["approval_requested", "approval_resolved"]
        )
        db: Database = api.server.app[DATABASE_KEY]
        asked = await db.approvals.request(
            ThreadId(thread["id"]), "run1", Address("role:echo"), restart_request()
        )
        await db.approvals.answer(asked, Address(ALICE), "allow", channel="slack")
        await eventually(
            lambda: len(receiver.accepted("/approvals")) >= 2, what="both approval events"
        )

    received = [
        Webhook(approvals["secret"]).verify(r.body, r.headers)
        for r in receiver.accepted("/approvals")
    ]
    assert [r["type"] for r in received] == [
        "timeline.approval_requested",
        "timeline.approval_resolved",
    ]
    request, resolution = (r["data"] for r in received)
    assert request["id"] == asked.id and request["title"] == "Restart the web service?"
    assert [o["id"] for o in request["options"]] == ["allow", "reject"]
    assert (resolution["target"], resolution["outcome"], resolution["by"]) == (
        asked.id,
        "answered",
        ALICE,
    )
    assert resolution["option"]["id"] == "allow" and resolution["channel"] == "slack"
