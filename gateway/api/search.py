"""Finding people, for operators (the console's conversation search reads it).

    GET /api/v1/search/persons?q=TEXT[&after=SLUG&limit=N]
    GET /api/v1/search/messages?q=TEXT[&before=POSITION&limit=N]

People whose slug, display name, email or a linked channel identity holds `q`, case aside
(`alice`, `Alice Example`, `example.com`, `slack:t1:U1`, `U1`; `person:alice` is the slug
`alice`), in slug order: `{"persons": [person, …], "next": SLUG | null}` — the shape of
`GET /api/v1/persons`, paged the same way. Merged, deactivated and erased people are found
too; their `state` says which.

Messages whose text holds `q`, case aside, newest first: `{"messages": [{"id", "thread_id",
"seq", "position", "at", "author", "text"}, …], "next": POSITION | null}` — `next` is the
`before` that continues; each request looks through at most `core.storage.message_search.SCANNED`
messages, so a page may be short, or empty, with a `next`. Retracted messages and erased
tombstones are not found.
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, named, query_int, read_query
from core.model.errors import InvalidInput
from core.model.people import parse_slug
from core.model.timeline import rfc3339
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from core.storage.rows import from_micros

routes = web.RouteTableDef()

MAX_QUERY = 200
"""Characters of `q` at most."""


def _search_text(raw: str) -> str:
    text = raw.strip()  # (the edge has checked it is acceptable text)
    if not text or len(text) > MAX_QUERY:
        raise InvalidInput(
            f"q must hold 1 to {MAX_QUERY} characters to look for (a name, an email, a slug or "
            "a channel identity)",
            code="invalid_parameter",
        )
    return text


@routes.get("/api/v1/search/persons")
async def search_persons(request: web.Request) -> web.Response:
    params = read_query(request, ["q", "after", "limit"])
    if "q" not in params:
        raise InvalidInput(
            "missing query parameter 'q' (a name, an email, a slug or a channel identity)",
            code="missing_parameter",
        )
    text = _search_text(params["q"])
    after = named("after", parse_slug, params["after"]) if "after" in params else None
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    found = await request.app[DATABASE_KEY].console.find_persons(text, after=after, limit=limit + 1)
    page = found[:limit]
    return web.json_response(
        {
            "persons": [person.to_json() for person in page],
            "next": page[-1].slug if len(found) > limit else None,
        }
    )


@routes.get("/api/v1/search/messages")
async def search_messages(request: web.Request) -> web.Response:
    params = read_query(request, ["q", "before", "limit"])
    if "q" not in params:
        raise InvalidInput(
            "missing query parameter 'q' (the text to look for in messages)",
            code="missing_parameter",
        )
    text = _search_text(params["q"])
    before = query_int(params, "before", default=0, low=1) if "before" in params else None
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    found = await request.app[DATABASE_KEY].console.find_messages(text, before=before, limit=limit)
    return web.json_response(
        {
            "messages": [
                {
                    "id": m.id,
                    "thread_id": m.thread_id,
                    "seq": m.seq,
                    "position": m.position,
                    "at": rfc3339(from_micros(m.at)),
                    "author": m.author,
                    "text": m.text,
                }
                for m in found.messages
            ],
            "next": found.next,
        }
    )
