"""The console's conversations: finding them, and reading one.

    GET /console/conversations[?q=TEXT | participant=ADDR][&after=ID&people_after=SLUG]
    GET /console/conversations?text=WORDS[&before=POSITION]
    GET /console/conversations/{id}[?as=ADDR][&before=SEQ][&archived=1]

**Finding.** `q` is looked for among people — slug, name, email, any linked channel identity
(`GET /api/v1/search/persons`) — and among the roles served (`GET /api/v1/roles`); an address
(`person:alice`, `role:concierge`) goes straight to its conversations. When one person alone
matches, their conversations are listed at once. Conversations are a participant's threads
(`GET /api/v1/threads?participant=…`), paged; people are paged too. `text` finds the messages
that say it (`GET /api/v1/search/messages`), newest first, each a link to its conversation's
page ending at it.

**Reading.** A conversation's page shows its participants and their states
(`GET /api/v1/threads/{id}`), its runs (`GET /api/v1/runs?thread=…`), the channels it reaches
with each shown message's state in its Slack DMs (`GET /api/v1/threads/{id}/channels`, as the
page is read: live events come without it) and its timeline, the
newest page first (`GET /api/v1/threads/{id}/timeline?latest=true`), with a link to the page
before. "View as" reads the timeline with `as=ADDR`: exactly what that participant may see, their
blackout marked (`gateway.console.timeline`). What was said before the latest "start fresh" is
archived: when the page reaches the start of the current session, the archived events before it
are shown folded (`include_archived=true`), and `archived=1` pages through them. New events
appear as they are committed (`gateway.console.stream`), on the newest page only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from aiohttp import web

from gateway.api.thread_channels import MAX_SPAN
from gateway.console.api import ApiRefused, api_path
from gateway.console.guard import Visit, page
from gateway.console.render import render
from gateway.console.timeline import Shown, last_seq, shown

PAGE = 50
ADDRESS_KINDS = ("person:", "role:")


def _digits(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isdigit() and len(raw) <= 16 else None


@page
async def find(request: web.Request, visit: Visit) -> web.StreamResponse:
    q = request.query.get("q", "").strip()
    participant = request.query.get("participant", "").strip() or None
    after = request.query.get("after") or None
    people_after = request.query.get("people_after") or None
    roles: list[dict[str, Any]] = (await visit.api.get(api_path("roles")))["roles"]
    text = request.query.get("text", "").strip()
    found: dict[str, Any] = {"roles": [], "people": None, "threads": None, "error": None}
    found["messages"] = None
    try:
        if text:
            before = _digits(request.query.get("before"))
            found["messages"] = await visit.api.get(
                api_path("search", "messages"), {"q": text, "before": before, "limit": PAGE}
            )
        if participant is None and q.lower().startswith(ADDRESS_KINDS):
            participant = q
        if participant is None and q:
            found["roles"] = _roles_matching(roles, q)
            people = await visit.api.get(
                api_path("search", "persons"), {"q": q, "after": people_after, "limit": PAGE}
            )
            found["people"] = people
            alone = len(people["persons"]) == 1 and not found["roles"] and not people_after
            if alone:
                participant = people["persons"][0]["address"]
        if participant is not None:
            found["threads"] = await visit.api.get(
                api_path("threads"), {"participant": participant, "after": after, "limit": PAGE}
            )
    except ApiRefused as refused:
        found["error"] = refused.message
    return render(
        "conversations.html",
        **visit.context("conversations"),
        q=q,
        text=text,
        participant=participant,
        all_roles=roles,
        **found,
    )


def _roles_matching(roles: list[dict[str, Any]], q: str) -> list[dict[str, Any]]:
    low = q.lower()
    return [r for r in roles if low in r["name"] or low in str(r["display_name"]).lower()]


@page
async def conversation(request: web.Request, visit: Visit) -> web.StreamResponse:
    thread_id = request.match_info["id"]
    viewer = request.query.get("as") or None
    before = _digits(request.query.get("before"))
    archived = request.query.get("archived") == "1"
    thread = await visit.api.get(api_path("threads", thread_id))
    runs = (await visit.api.get(api_path("runs"), {"thread": thread_id}))["runs"]
    timeline = api_path("threads", thread_id, "timeline")
    query: dict[str, Any] = {"as": viewer, "limit": PAGE, "include_archived": archived}
    query.update({"before": before} if before is not None else {"latest": True})
    newest = await visit.api.get(timeline, query)
    events = newest["events"]
    folded: dict[str, Any] = {"events": [], "more": False, "next": None}
    if not archived and not newest["more"] and (not events or events[0]["seq"] > 1):
        earlier: dict[str, Any] = {"as": viewer, "limit": PAGE, "include_archived": True}
        earlier.update({"before": events[0]["seq"]} if events else {"latest": True})
        folded = await visit.api.get(timeline, earlier)
    states = {p["address"]: p["state"] for p in thread["participants"]}
    channels = await _channels(visit, thread_id, events)
    return render(
        "conversation.html",
        **visit.context("conversations"),
        thread=thread,
        runs=runs,
        viewer=viewer,
        viewer_state=states.get(viewer) if viewer else None,
        archived=archived,
        before=before,
        channels=channels,
        events=[_delivered(shown(e, viewer), channels) for e in events],
        more=newest["more"],
        next_before=newest["next"],
        folded=[shown(e, viewer) for e in folded["events"]],
        folded_more=folded["more"],
        folded_next=folded["next"],
        live=before is None,
        after=last_seq(events, folded["events"]),
    )


async def _channels(visit: Visit, thread_id: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    # The API answers at most MAX_SPAN seqs: a page viewed as someone past a long blackout
    # spans more, and only its newest MAX_SPAN seqs then say where they were delivered.
    last = events[-1]["seq"] if events else 0
    span = {"first": max(events[0]["seq"], last - MAX_SPAN + 1), "last": last} if events else {}
    found: dict[str, Any] = await visit.api.get(api_path("threads", thread_id, "channels"), span)
    return found


def _delivered(event: Shown, channels: dict[str, Any]) -> Shown:
    where = [
        (f"Slack {dm['channel_id']}", d["state"])
        for dm in channels["slack"]
        for d in dm["deliveries"]
        if d["message_id"] == event.id
    ]
    return replace(event, delivered=where) if where else event
