"""The console's people: who they are, their channel identities and their conversations.

    GET /console/people[?q=TEXT][&after=SLUG]
    GET /console/people/{slug}[?after=THREAD][&done=WHAT]

**The list** is `GET /api/v1/persons` in slug order, or, with `q`, the people whose slug, name,
email or any linked identity holds it (`GET /api/v1/search/persons`); both paged by slug. Neither
answer counts identities, so each person of the page is read once more (`GET
/api/v1/persons/{slug}`): a page is a few dozen in-process reads, which is why it is short.

**A person's page** is their profile with identities (`GET /api/v1/persons/{slug}`) and their
conversations (`GET /api/v1/threads?participant=person:SLUG`, paged). Link codes are not listed:
the gateway keeps only a code's digest and shows it once, when it is issued. What can be done to
the person — link an identity, issue a link code, merge, deactivate or reactivate, erase — is in
`gateway.console.people_actions`, each through a confirmation.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.console.api import api_path
from gateway.console.guard import Visit, page
from gateway.console.render import render

PAGE = 25
"""People a list page shows (each is read once more for their identities)."""
THREADS = 50

DONE = {
    "linked": "The identity is linked.",
    "already": "The identity was already this person's; nothing changed.",
    "deactivated": "The person is deactivated.",
    "activated": "The person is active again.",
    "merged": "The person was merged into this one; their identities and conversations are here.",
    "erased": "The person is erased.",
}
"""The notices a person's page shows after an action (`?done=`)."""


@page
async def people(request: web.Request, visit: Visit) -> web.StreamResponse:
    q = request.query.get("q", "").strip()
    after = request.query.get("after") or None
    query: dict[str, Any] = {"after": after, "limit": PAGE}
    if q:
        found = await visit.api.get(api_path("search", "persons"), {"q": q, **query})
    else:
        found = await visit.api.get(api_path("persons"), query)
    rows = [await _with_identities(visit, p) for p in found["persons"]]
    return render(
        "people.html", **visit.context("people"), q=q, after=after, rows=rows, next=found["next"]
    )


async def _with_identities(visit: Visit, person: dict[str, Any]) -> dict[str, Any]:
    profile: dict[str, Any] = await visit.api.get(api_path("persons", person["slug"]))
    return profile


@page
async def person(request: web.Request, visit: Visit) -> web.StreamResponse:
    slug = request.match_info["slug"]
    after = request.query.get("after") or None
    profile = await visit.api.get(api_path("persons", slug))
    threads = await visit.api.get(
        api_path("threads"), {"participant": profile["address"], "after": after, "limit": THREADS}
    )
    return render(
        "person.html",
        **visit.context("people"),
        person=profile,
        threads=threads["threads"],
        next=threads["next"],
        after=after,
        notice=DONE.get(request.query.get("done", "")),
    )
