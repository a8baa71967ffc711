"""Finding people, for operators (the console's conversation search reads it).

    GET /api/v1/search/persons?q=TEXT[&after=SLUG&limit=N]

People whose slug, display name, email or a linked channel identity holds `q`, case aside
(`alice`, `Alice Example`, `example.com`, `slack:t1:U1`, `U1`; `person:alice` is the slug
`alice`), in slug order: `{"persons": [person, …], "next": SLUG | null}` — the shape of
`GET /api/v1/persons`, paged the same way. Merged, deactivated and erased people are found
too; their `state` says which.
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, named, query_int, read_query
from core.model.errors import InvalidInput
from core.model.people import parse_slug
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE

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
