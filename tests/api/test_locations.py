"""Every 201 carries `Location`, and `Location` reads what was created.

One scenario calls each operation the OpenAPI document says answers 201 (the set is taken from
the document, so a new creating route must be added here), takes its `Location` — a path on the
gateway — and reads it with the same credentials: 200, holding what the 201 answered (the same
thread, event, entry, run, task, person or endpoint; for a token or a link code, shown only
once, what it belongs to).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN
from tests.api.edge import Edge, edge_settings
from tests.api.openapi_doc import Document
from tests.serving import serve
from tests.waiting import eventually
from tests.webhooks.conftest import SECRETS


@pytest.fixture
async def edge(tmp_path: Path, sqlite_url: str) -> AsyncIterator[Edge]:
    settings = edge_settings(tmp_path, sqlite_url, endpoints_allow_private=True)
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO}, secrets=SECRETS)
    async with serve(app, port=settings.port) as server, aiohttp.ClientSession() as session:
        yield Edge(server, session)


class Creating:
    """Creating calls: each must answer 201 with a `Location` that reads back (200)."""

    def __init__(self, edge: Edge) -> None:
        self.edge = edge
        self.doc = Document()
        self.covered: set[str] = set()

    async def __call__(self, path: str, body: Any = None, *, token: str = TOKEN) -> tuple[Any, Any]:
        """(what the 201 answered, what its `Location` reads)."""
        made = (
            await self.edge.post(path, body, token=token)
            if body is not None
            else (await self.edge.call("POST", path, token=token))
        )
        assert made.status == 201, f"POST {path}: {made.status} {made.text[:300]}"
        location = made.headers.get("Location")
        assert location is not None and location.startswith("/"), f"POST {path}: {location!r}"
        self.covered.add(f"POST {self.doc.template(path)}")
        read = await self.edge.get(location, token=token)
        assert read.status == 200, f"{location} (from POST {path}): {read.status} {read.text}"
        return made.body, read.body


async def _run_of(edge: Edge, thread: str) -> str | None:
    runs = (await edge.get(f"/api/v1/runs?thread={thread}")).body["runs"]
    return str(runs[0]["id"]) if runs else None


async def test_every_201_has_a_location_that_reads_what_was_created(edge: Edge) -> None:
    """Threads, messages, retractions, memory redactions, sessions, run tokens, subscriptions,
    tasks, comments, people, identities, link codes, operator tokens, endpoints, and the widget's
    messages and link codes: each 201's `Location` answers 200 with what was made."""
    create = Creating(edge)

    thread, read = await create("/api/v1/threads", {"participants": ["person:ann", "role:echo"]})
    assert read["id"] == thread["id"]
    tid = thread["id"]
    message, read = await create(
        f"/api/v1/threads/{tid}/messages", {"author": "person:ann", "text": "hello"}
    )
    assert [e["id"] for e in read["events"]] == [message["id"]]
    retraction, read = await create(
        f"/api/v1/threads/{tid}/messages/{message['id']}/retract", {"author": "person:ann"}
    )
    assert [e["id"] for e in read["events"]] == [retraction["id"]]

    run_id = await eventually(lambda: _run_of(edge, tid), what="the run of ann's conversation")
    session, read = await create(f"/api/v1/runs/{run_id}/sessions")
    assert read["id"] == session["id"] == run_id
    _, read = await create(f"/api/v1/runs/{run_id}/token")
    assert read["id"] == run_id  # the token is shown once: Location is the run it names
    _, read = await create(
        f"/api/v1/runs/{run_id}/subscriptions", {"external_key": "tracker:INC-1"}
    )
    assert read["awaiting"] == ["tracker:INC-1"]

    token = (await edge.post(f"/api/v1/runs/{run_id}/token")).body["token"]
    stored = await edge.post("/api/v1/tools/store", {"payload": {"note": "4B"}}, token=token)
    assert stored.status == 200, stored.text
    entry, read = await create(f"/api/v1/roles/echo/memory/{stored.body['result']['id']}/redact")
    assert [e["id"] for e in read["entries"]] == [entry["id"]]
    assert read["entries"][0]["redacted"] is not None

    task, read = await create("/api/v1/tasks", {"author": "person:ann", "title": "Printer"})
    assert read["id"] == task["id"]
    comment, read = await create(
        f"/api/v1/tasks/{task['id']}/comments", {"author": "person:ann", "text": "ok"}
    )
    assert comment["id"] in [e["id"] for e in read["history"]]

    person, read = await create("/api/v1/persons", {"display_name": "Bea"})
    assert read["slug"] == person["slug"]
    _, read = await create(
        f"/api/v1/persons/{person['slug']}/identities", {"identity": "web:default:bea"}
    )
    assert [i["identity"] for i in read["identities"]] == ["web:default:bea"]
    code, read = await create(f"/api/v1/persons/{person['slug']}/link-codes")
    assert read["slug"] == code["person"]
    made, read = await create("/api/v1/tokens", {"name": "ci"})
    assert read["name"] == made["name"] == "ci" and "token" not in read  # shown once

    async def receive(request: web.Request) -> web.Response:
        return web.Response()

    async with serve(receive) as receiver:
        url = str(receiver.make_url("/hook"))
        endpoint, read = await create("/api/v1/endpoints", {"url": url})
        assert read["id"] == endpoint["id"] and "secret" not in read
        assert (await edge.call("DELETE", f"/api/v1/endpoints/{endpoint['id']}")).status == 200

    widget = await edge.post("/widget/v1/sessions", {"role": "echo"}, token=None)
    assert widget.status == 200, widget.text
    session_token = widget.body["session_token"]
    posted, read = await create("/widget/v1/messages", {"text": "hi"}, token=session_token)
    assert [e["id"] for e in read["events"]] == [posted["event"]["id"]]
    _, read = await create("/widget/v1/link-codes", token=session_token)
    assert "events" in read  # the conversation of the person the code links

    creating = {
        f"{method} {path}"
        for method, path, op in create.doc.operations()
        if "201" in op["responses"]
    }
    assert create.covered == creating, "a creating operation without its Location check"
