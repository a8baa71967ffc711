"""The console's pages over real HTTP: the overview's figures, finding conversations, reading
one (states, retraction, erasure, the blackout of "view as", archived sessions folded, paging),
the live stream, errors as sentences — and the two read routes the console added to the
operator API (`GET /api/v1/overview`, `GET /api/v1/search/persons`).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from gateway.api.thread_channels import MAX_SPAN
from gateway.console.api import ApiRefused, api_path
from gateway.console.guard import Visit, page
from tests.api.conftest import Api
from tests.console.conftest import Console, ConsoleClient, console_app
from tests.serving import free_port, serve
from tests.waiting import eventually


async def _settled(console: Console, thread: str, status: str = "ready") -> dict[str, Any]:
    """The thread's one run, once it has taken a turn and runs none, in `status`."""

    async def run() -> dict[str, Any] | None:
        runs = (await console.api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        done = runs and runs[0]["turns"] and not runs[0]["running"]
        return runs[0] if done and runs[0]["status"] == status else None

    return await eventually(run, what=f"the run of {thread} {status} after its turn")


async def _person(console: Console, slug: str, name: str, email: str, *identities: str) -> None:
    made = await console.api.post(
        "/api/v1/persons", {"slug": slug, "display_name": name, "email": email}
    )
    assert made.status == 201, made.text
    for identity in identities:
        path = f"/api/v1/persons/{slug}/identities"
        linked = await console.api.post(path, {"identity": identity})
        assert linked.status == 201, linked.text


# --- the overview ---------------------------------------------------------------------------------


async def test_the_overview_counts_conversations_runs_failures_endpoints_replicas_and_roles(
    console: Console,
) -> None:
    echoed = (await console.api.thread("person:ann", "role:echo"))["id"]
    broken = (await console.api.thread("person:bob", "role:broken"))["id"]
    await console.api.thread("person:ann", "person:bob")
    await console.api.say(echoed, "person:ann", "hello")
    await console.api.say(broken, "person:bob", "hello")
    ready = await _settled(console, echoed)
    failed = await _settled(console, broken, "failed")

    figures = (await console.api.get("/api/v1/overview")).body

    assert figures["threads"] == 3
    runs = figures["runs"]
    assert runs["total"] == 2 and runs["failed"] == 1 and runs["running"] == 0
    assert runs["awake"] + runs["asleep"] + runs["not_opened"] == 2
    now = {
        "awake" if r["session"]["awake"] else "asleep" if r["session"]["opened"] else "not_opened"
        for r in (ready, failed)
    }
    assert {state for state in now if runs[state]} == now
    assert figures["failures_last_hour"] == 1
    assert figures["replica"] == (await console.api.get("/api/v1/replicas")).body["this"]

    client = await console.signed_in()
    page = await client.get("/console")
    assert page.status == 200
    cards = _cards(page.said)
    assert cards["Conversations"].startswith("3")
    assert '<a href="/console/conversations">3' in page.text
    assert cards["Failures in the last hour"].startswith("1")
    assert re.search(r"failed\s+1", cards["Runs"])
    assert re.search(r"active\s+0\s+parked\s+0\s+disabled\s+0", cards["Endpoints"])
    assert "1 live of 1" in cards["Replicas"]
    assert "Echo role:echo" in cards["Roles"] and "Broken role:broken" in cards["Roles"]
    assert 'href="/console/conversations?participant=role%3Aecho"' in page.text


def _cards(html: str) -> dict[str, str]:
    """Each overview card's heading and its text, tags dropped and spaces collapsed."""
    found = {}
    for heading, body in re.findall(r'<h2 id="c-[a-z]+">([^<]+)</h2>(.*?)</section>', html, re.S):
        found[heading] = " ".join(re.sub(r"<[^>]+>", " ", body).split())
    return found


# --- finding conversations ------------------------------------------------------------------------


async def test_people_are_found_by_name_email_slug_or_channel_identity(console: Console) -> None:
    await _person(console, "alice", "Alice Example", "alice@example.com", "slack:t1:U1")
    await _person(console, "albert", "Albert Other", "al@example.org", "web:shop:42")
    await _person(console, "zed", "Zed", "zed@zed.net")

    async def slugs(q: str, **more: str) -> tuple[list[str], str | None]:
        query = {"q": q, **more}
        reply = await console.api.get(
            "/api/v1/search/persons?" + "&".join(f"{k}={v}" for k, v in query.items())
        )
        assert reply.status == 200, reply.text
        return [p["slug"] for p in reply.body["persons"]], reply.body["next"]

    assert await slugs("slack:t1:U1") == (["alice"], None)
    assert await slugs("SLACK:T1:u1") == (["alice"], None)  # case aside
    assert await slugs("U1") == (["alice"], None)
    assert await slugs("alice@example") == (["alice"], None)
    assert await slugs("person:alice") == (["alice"], None)
    assert await slugs("Example") == (["albert", "alice"], None)  # a name, an email
    assert await slugs("web:shop") == (["albert"], None)
    assert await slugs("al", limit="1") == (["albert"], "albert")
    assert await slugs("al", limit="1", after="albert") == (["alice"], None)
    assert await slugs("100%25") == ([], None)  # LIKE's wildcards are only text
    assert await slugs("_") == ([], None)
    missing = await console.api.get("/api/v1/search/persons")
    assert "'q'" in missing.error(422, "missing_parameter")
    (await console.api.get("/api/v1/search/persons?q=%20")).error(422, "invalid_parameter")
    (await console.api.get("/api/v1/search/persons?q=a", token=None)).error(401)


async def test_a_persons_conversations_are_found_by_their_slack_identity(console: Console) -> None:
    await _person(console, "alice", "Alice Example", "alice@example.com", "slack:t1:U1")
    await _person(console, "alina", "Alina", "alina@example.com")
    first = (await console.api.thread("person:alice", "role:echo"))["id"]
    second = (await console.api.thread("person:alice", "person:alina"))["id"]
    client = await console.signed_in()

    alone = await client.get("/console/conversations?q=slack%3At1%3AU1")

    assert alone.status == 200
    assert "Alice Example" in alone.text
    assert "Conversations of person:alice" in alone.plain
    assert f'href="/console/conversations/{first}"' in alone.text
    assert f'href="/console/conversations/{second}"' in alone.text

    both = await client.get("/console/conversations?q=ali")
    assert "Alina" in both.text and "Alice Example" in both.text
    assert "Conversations of" not in both.text  # two people: pick one first
    by_role = await client.get("/console/conversations?q=echo")
    assert 'href="/console/conversations?participant=role%3Aecho"' in by_role.text
    listed = await client.get("/console/conversations?participant=role%3Aecho")
    assert f'href="/console/conversations/{first}"' in listed.text
    nobody = await client.get("/console/conversations?q=nobody-at-all")
    assert "Nobody matches" in nobody.said
    bad = await client.get("/console/conversations?q=person%3ANot%20An%20Address")
    assert bad.status == 200 and 'class="error" role="alert"' in bad.text


async def test_messages_are_found_by_their_words_and_link_to_where_they_were_said(
    console: Console,
) -> None:
    ann = (await console.api.thread("person:ann", "person:zed"))["id"]
    said = await console.api.say(ann, "person:ann", "the parcel never came")
    await console.api.say(ann, "person:zed", "sorry to hear")
    client = await console.signed_in()

    page = await client.get("/console/conversations?text=PARCEL")

    assert page.status == 200
    assert "Messages that say “PARCEL”" in page.plain
    assert "person:ann : the parcel never came" in page.plain
    assert f'href="/console/conversations/{ann}?before=2#e-{said["id"]}"' in page.text
    assert "sorry to hear" not in page.plain
    shown = await client.get(f"/console/conversations/{ann}?before=2")
    assert "the parcel never came" in shown.plain and "sorry to hear" not in shown.plain
    none = await client.get("/console/conversations?text=zeppelin")
    assert "No message says “zeppelin”." in none.plain


async def test_conversations_and_people_are_paged(console: Console) -> None:
    for n in range(52):
        await console.api.thread("person:ann", f"role:r{n:02d}")
    client = await console.signed_in()
    first = await client.get("/console/conversations?participant=person%3Aann")
    assert first.text.count('<a href="/console/conversations/') == 50
    following = re.search(r'<a rel="next" href="([^"]+)">Next page', first.text)
    assert following is not None
    second = await client.get(following.group(1).replace("&amp;", "&"))
    assert second.text.count('<a href="/console/conversations/') == 2
    assert "Next page" not in second.text


# --- reading one ----------------------------------------------------------------------------------


@dataclass
class Group:
    thread: str
    retracted: str


async def _group(console: Console) -> Group:
    """Alice, Bob and Carol with an unserved role: Bob retracts a message, is removed (Alice
    speaks meanwhile) and re-added; Carol speaks and is erased."""
    for slug in ("alice", "bob", "carol"):
        await _person(console, slug, slug.title(), f"{slug}@example.com")
    api = console.api
    thread = (await api.thread("person:alice", "person:bob", "person:carol", "role:helpdesk"))["id"]
    await api.say(thread, "person:alice", "Can someone reset my <password>?")
    wrong = await api.say(thread, "person:bob", "Done: it is hunter2")
    retracted = await api.post(
        f"/api/v1/threads/{thread}/messages/{wrong['id']}/retract",
        {"author": "person:bob", "reason": "Oops."},
    )
    assert retracted.status == 201, retracted.text
    await api.say(thread, "person:carol", "Carol was here")
    await api.set_state(thread, "person:bob", "removed")
    await api.say(thread, "person:alice", "Bob must not read this")
    await api.set_state(thread, "person:bob", "active")
    await api.say(thread, "person:alice", "Welcome back, Bob")
    erased = await api.call("DELETE", "/api/v1/persons/carol?erase=true")
    assert erased.status == 200, erased.text
    return Group(thread, wrong["id"])


async def test_a_conversation_shows_states_retractions_tombstones_and_the_blackout(
    console: Console,
) -> None:
    group = await _group(console)
    client = await console.signed_in()

    everyone = await client.get(f"/console/conversations/{group.thread}")

    assert everyone.status == 200, everyone.text
    said = everyone.said
    assert "Can someone reset my <password>?" in said  # escaped on the page, shown as written
    assert "<password>" not in everyone.text
    assert "Bob must not read this" in said
    line = _line(everyone.text, group.retracted)
    assert "event message retracted" in line and "retracted</li>" in line
    assert "retracted a message: Oops." in said
    assert '<em class="tombstone">erased</em>' in everyone.text
    assert "Carol was here" not in said
    assert 'person:carol</strong> <span class="text">was erased' in everyone.text
    assert "active → removed" in said and "removed → active" in said
    assert "Blackout begins: person:bob was removed here" in said  # everyone's, marked

    as_bob = await client.get(f"/console/conversations/{group.thread}?as=person%3Abob")

    assert as_bob.status == 200
    seen = as_bob.said
    assert "Viewing as person:bob: removed now" not in as_bob.plain  # re-added since
    assert "Viewing as person:bob" in as_bob.plain
    assert "Blackout begins: person:bob was removed here" in seen
    assert "Blackout ends: person:bob was re-added here" in seen
    assert "Bob must not read this" not in seen
    assert "Welcome back, Bob" in seen and "Can someone reset my <password>?" in seen
    assert seen.index("Blackout begins") < seen.index("Blackout ends") < seen.index("Welcome back")
    assert '<option value="person:bob" selected>' in as_bob.text

    stranger = await client.get(f"/console/conversations/{group.thread}?as=person%3Azed")
    assert stranger.status == 403 and "Traceback" not in stranger.text
    assert 'role="alert"' in stranger.text


def _line(html: str, event_id: str) -> str:
    found = re.search(rf'<li class="[^"]*" id="e-{event_id}".*?</li>\s*(?=<li class="event|</ol>)',
                      html, re.S)  # fmt: skip
    assert found is not None, f"no line for {event_id}"
    return found.group(0)


async def test_what_was_said_before_a_fresh_start_is_folded_away(console: Console) -> None:
    thread = (await console.api.thread("person:dan", "role:echo"))["id"]
    await console.api.say(thread, "person:dan", "before the fresh start")
    run = await _settled(console, thread)
    fresh = await console.api.post(f"/api/v1/runs/{run['id']}/sessions")
    assert fresh.status == 201, fresh.text
    await console.api.say(thread, "person:dan", "after the fresh start")
    client = await console.signed_in()

    page = await client.get(f"/console/conversations/{thread}")

    folded, _, current = page.said.partition("</details>")
    assert "archived events from before the latest “start fresh”" in folded
    assert "before the fresh start" in folded
    assert "after the fresh start" in current and "before the fresh start" not in current
    assert "A fresh session started" in current
    assert "<td>2</td>" in page.text  # the run's session number
    unfolded = await client.get(f"/console/conversations/{thread}?archived=1")
    assert "<details" not in unfolded.text
    assert "before the fresh start" in unfolded.said and "after the fresh start" in unfolded.said


async def test_the_timeline_is_paged_newest_first(console: Console) -> None:
    thread = (await console.api.thread("person:ann", "role:quiet"))["id"]
    for n in range(1, 56):
        await console.api.say(thread, "person:ann", f"message {n}")
    client = await console.signed_in()

    newest = await client.get(f"/console/conversations/{thread}")

    assert newest.said.count('class="event message') == 50
    assert ">message 5</span>" not in newest.text
    assert ">message 6</span>" in newest.text and ">message 55</span>" in newest.text
    older = re.search(r'<a rel="prev" href="([^"]+)">Older events', newest.text)
    assert older is not None
    earlier = await client.get(older.group(1).replace("&amp;", "&"))
    assert earlier.said.count('class="event message') == 5
    assert "Older events" not in earlier.text and "data-stream" not in earlier.text


async def test_a_page_spanning_a_long_blackout_asks_the_newest_seqs_delivery_states(
    console: Console,
) -> None:
    """Viewed as someone removed for longer than the channels read's span (`MAX_SPAN` seqs), a
    page of what they may see runs from before the blackout to after it: the page still opens,
    asking where only its newest `MAX_SPAN` seqs were delivered."""
    thread = (await console.api.thread("person:ann", "person:bo", "role:quiet"))["id"]
    await console.api.say(thread, "person:bo", "before I go")
    await console.api.set_state(thread, "person:bo", "removed")
    for n in range(MAX_SPAN + 10):
        await console.api.say(thread, "person:ann", f"while away {n}")
    await console.api.set_state(thread, "person:bo", "active")
    await console.api.say(thread, "person:ann", "welcome back")
    client = await console.signed_in()

    as_bo = await client.get(f"/console/conversations/{thread}?as=person%3Abo")

    assert as_bo.status == 200, as_bo.text
    seen = as_bo.said
    assert "before I go" in seen and "welcome back" in seen and "while away" not in seen
    assert seen.index("Blackout begins") < seen.index("Blackout ends") < seen.index("welcome")


# --- the live stream ------------------------------------------------------------------------------


@dataclass
class Frame:
    event: str
    id: str | None
    data: str


class Stream:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self, kind: str = "timeline") -> Frame:
        """The next frame of this kind (pings and other kinds are passed over)."""
        while True:
            frame = await self._frame()
            if frame.event == kind:
                return frame

    async def _frame(self) -> Frame:
        fields: dict[str, list[str]] = {}
        while True:
            raw = await self.response.content.readline()
            assert raw, "the stream ended"
            line = raw.decode().rstrip("\r\n")
            if not line:
                if fields:
                    return Frame(
                        fields.get("event", ["message"])[0],
                        fields.get("id", [None])[0],
                        "\n".join(fields.get("data", [])),
                    )
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields.setdefault(name, []).append(value)


@asynccontextmanager
async def _stream(client: ConsoleClient, path: str, **headers: str) -> AsyncIterator[Stream]:
    url = client.server.make_url(path)
    async with client.session.get(url, headers=headers) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        stream = Stream(response)
        await stream.next("ready")
        yield stream


async def test_new_events_arrive_live_and_resume_after_the_last_one(console: Console) -> None:
    thread = (await console.api.thread("person:ann", "role:quiet"))["id"]
    first = await console.api.say(thread, "person:ann", "already there")
    client = await console.signed_in()
    path = f"/console/conversations/{thread}/stream?after={first['seq']}"

    async with _stream(client, path) as stream:
        posted = await console.api.say(thread, "person:ann", "a <new> message")
        frame = await stream.next()

    assert frame.id == str(posted["seq"])
    assert f'id="e-{posted["id"]}"' in frame.data
    assert "a &lt;new&gt; message" in frame.data
    async with _stream(client, path, **{"Last-Event-ID": str(posted["seq"])}) as stream:
        later = await console.api.say(thread, "person:ann", "later still")
        resumed = await stream.next()
    assert resumed.id == str(later["seq"])  # nothing sent twice


async def test_the_stream_viewing_as_a_removed_participant_sends_nothing_of_the_blackout(
    console: Console,
) -> None:
    thread = (await console.api.thread("person:ann", "person:bob"))["id"]
    removed = await console.api.set_state(thread, "person:bob", "removed")
    client = await console.signed_in()
    path = f"/console/conversations/{thread}/stream?after={removed['seq']}&as=person%3Abob"

    async with _stream(client, path) as stream:
        await console.api.say(thread, "person:ann", "not for Bob")
        back = await console.api.set_state(thread, "person:bob", "active")
        frame = await stream.next()  # the re-add comes after the hidden message: it came first

    assert frame.id == str(back["seq"])
    assert "Blackout ends" in frame.data and "not for Bob" not in frame.data


async def test_the_stream_ends_when_the_session_does(console: Console) -> None:
    thread = (await console.api.thread("person:ann", "role:quiet"))["id"]
    client = await console.signed_in()
    csrf = (await client.get("/console")).csrf
    async with _stream(client, f"/console/conversations/{thread}/stream") as stream:
        signed_out = await console.browser().session.post(
            client.server.make_url("/console/logout"),
            data={"csrf": csrf},
            cookies={"rolecall_console": client.cookie() or ""},
            allow_redirects=False,
        )
        assert signed_out.status == 303
        await console.api.say(thread, "person:ann", "after signing out")
        ended = await stream.next("ended")
    assert "session has ended" in ended.data


# --- errors, headers, the rest --------------------------------------------------------------------


async def test_errors_are_pages_with_a_sentence_never_a_stack(console: Console) -> None:
    client = await console.signed_in()
    unknown = await client.get("/console/conversations/" + "0" * 31 + "1")
    assert unknown.status == 404 and "<h1>Not found</h1>" in unknown.text
    assert re.search(r'role="alert">No thread [^<]+\.</p>', unknown.text)
    nowhere = await client.get("/console/no-such-page")
    assert nowhere.status == 404 and "The console has no page at this address" in nowhere.text
    for shown in (unknown, nowhere):
        assert "Traceback" not in shown.text
        assert shown.headers["Content-Type"].startswith("text/html")


async def test_pages_carry_a_strict_content_security_policy_and_are_not_cached(
    console: Console,
) -> None:
    client = await console.signed_in()
    page = await client.get("/console")
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert page.headers["Cache-Control"] == "no-store"
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    for asset in re.findall(r'(?:href|src)="(/console/static/[^"]+)"', page.text):
        served = await console.browser().get(asset)  # open: the login page needs them
        assert served.status == 200 and served.headers["ETag"]
        etag = served.headers["ETag"]
        again = await console.browser().get(asset, headers={"If-None-Match": etag})
        assert again.status == 304
    assert (await client.get("/console/static/nothing.css")).status == 404
    assert "http" not in (await client.get("/console/static/console.css")).text.replace(
        "http-equiv", ""
    )


# --- what the console does goes through the API ---------------------------------------------------


async def test_console_calls_are_the_apis_own_audited_as_the_sessions_operator(
    tmp_path: Path,
) -> None:
    """A console page's change is the operator API's handler answering an in-process request:
    same checks, same JSON and `Location`, same refusals, and the audit record names the
    session's operator token and the browser's address. Nothing but the operator API can be
    called that way."""
    port = free_port()
    app = console_app(tmp_path, port)

    @page
    async def probe(request: web.Request, visit: Visit) -> web.StreamResponse:
        body = {"participants": ["person:ann", "role:echo"]}
        made = await visit.api.call("POST", api_path("threads"), body=body)
        try:
            await visit.api.call("POST", api_path("threads"), body={"participants": []})
        except ApiRefused as error:
            refused = [error.status, error.code]
        outside = []
        for path in ("/hooks/tracker", "/console", "/api/v1/tools/store"):
            try:
                await visit.api.get(path)
            except ValueError:
                outside.append(path)
        return web.json_response(
            {
                "status": made.status,
                "thread": made.body["id"],
                "location": made.headers["Location"],
                "refused": refused,
                "outside": outside,
            }
        )

    app.router.add_post("/console/probe", probe)
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        api = Api(server, http)
        token = (await api.post("/api/v1/tokens", {"name": "ci"})).body["token"]
        console = Console(server, api, tmp_path / "t.db", [])
        client = await console.signed_in(token)
        try:
            csrf = (await client.get("/console")).csrf
            answered = await client.post("/console/probe", {"csrf": csrf})
        finally:
            await client.session.close()
        audit = await api.get("/api/v1/audit?action=thread.resolve")

    assert answered.status == 200, answered.text
    probed = json.loads(answered.text)
    assert probed["status"] == 201
    assert probed["location"] == f"/api/v1/threads/{probed['thread']}"
    assert probed["refused"] == [422, "too_few_participants"]
    assert probed["outside"] == ["/hooks/tracker", "/console", "/api/v1/tools/store"]
    [record] = audit.body["records"]
    assert record["actor"] == "ci" and record["client"] == "127.0.0.1"
    assert record["detail"] == {"thread_id": probed["thread"], "created": True}
