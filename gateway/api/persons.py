"""People and their channel identities over HTTP, for operators.

    GET   /api/v1/persons[?after=&limit=]        people in slug order
    POST  /api/v1/persons                        create: {slug?, display_name, email?}
    GET   /api/v1/persons/{slug}                 one person with their identities
    PATCH /api/v1/persons/{slug}                 change: {active?, display_name?, email?}
    POST  /api/v1/persons/{slug}/identities      link an identity: {identity}
    POST  /api/v1/persons/{slug}/link-codes      a one-time link code: {ttl_seconds?}
    POST  /api/v1/link-codes/redeem              link an identity with a code: {code, identity}
    GET   /api/v1/persons/{slug}/erasure         what erasing the person would remove
    DELETE /api/v1/persons/{slug}?erase=true     erase the person (docs/privacy.md)

The rules (identities, link codes, merging one person into another) are `core.model.people`'s; a
redemption that leaves a person without identities merges them, re-addressing their threads.
Each route that changes something is audited (`gateway.api.audit`): a redemption that merged
someone as `person.merge`, any other as `person.link`.

Erasing (`core.model.erasure`) asks for `?erase=true`: without it the answer is 422
`erase_not_confirmed`, its message listing what would go. Before the erasure, the turns running
in the person's threads are stopped, so none answers after it; after it, each conversation run
of those threads starts fresh, so no agent session keeps what was said.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.requests import (
    DATABASE_KEY,
    HOST_KEY,
    ROLES_KEY,
    created,
    field,
    named,
    query_int,
    read_object,
    read_query,
)
from core.model.erasure import Erasure
from core.model.errors import InvalidInput, NotFound, RolecallError
from core.model.people import (
    KEEP,
    LinkedIdentity,
    Person,
    PersonChange,
    check_display_name,
    check_email,
    check_ttl,
    normalize_link_code,
    parse_identity,
    parse_slug,
)
from core.model.runs import RunKind
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.audit import audited, note

routes = web.RouteTableDef()


def _slug(request: web.Request) -> str:
    """The path's slug; one that could never be a person's is simply not found."""
    raw = request.match_info["slug"]
    try:
        return parse_slug(raw)
    except RolecallError:
        raise NotFound(f"no person with slug {raw!r}", code="person_not_found") from None


def _location(slug: str) -> str:
    return f"/api/v1/persons/{slug}"


def _active(raw: object) -> bool:
    if not isinstance(raw, bool):
        raise InvalidInput("active must be true or false", code="invalid_active")
    return raw


def profile_json(person: Person, identities: list[LinkedIdentity]) -> dict[str, Any]:
    return {**person.to_json(), "identities": [i.to_json() for i in identities]}


@routes.get("/api/v1/persons")
async def list_persons(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit"])
    after = named("after", parse_slug, params["after"]) if "after" in params else None
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    found = await request.app[DATABASE_KEY].people.list(after=after, limit=limit + 1)
    page = found[:limit]
    return web.json_response(
        {
            "persons": [p.to_json() for p in page],
            "next": page[-1].slug if len(found) > limit else None,
        }
    )


@routes.post("/api/v1/persons")
@audited("person.create")
async def create_person(request: web.Request) -> web.Response:
    body = await read_object(request, required=["display_name"], optional=["slug", "email"])
    slug = field(body, "slug", parse_slug) if body.get("slug") is not None else None
    person = await request.app[DATABASE_KEY].people.create(
        slug=slug,
        display_name=field(body, "display_name", check_display_name),
        email=field(body, "email", check_email),
    )
    note(request, slug=person.slug)
    return created(profile_json(person, []), _location(person.slug))


@routes.get("/api/v1/persons/{slug}")
async def show_person(request: web.Request) -> web.Response:
    read_query(request, [])
    person, identities = await request.app[DATABASE_KEY].people.profile(_slug(request))
    return web.json_response(profile_json(person, identities))


@routes.patch("/api/v1/persons/{slug}")
@audited("person.update", "person.deactivate", "person.activate")
async def update_person(request: web.Request) -> web.Response:
    slug = _slug(request)
    body = await read_object(request, optional=["active", "display_name", "email"])
    change = PersonChange(
        display_name=field(body, "display_name", check_display_name)
        if "display_name" in body
        else None,
        email=field(body, "email", check_email) if "email" in body else KEEP,
        active=field(body, "active", _active) if "active" in body else None,
    )
    people = request.app[DATABASE_KEY].people
    before = await people.get(slug)
    after = await people.update(slug, change)
    note(
        request,
        _person_action(change.active),
        slug=slug,
        fields=sorted(body),
        before={"active": before.active},
        after={"active": after.active},
    )
    return web.json_response(profile_json(*await people.profile(slug)))


def _person_action(active: bool | None) -> str:
    if active is None:
        return "person.update"
    return "person.activate" if active else "person.deactivate"


@routes.post("/api/v1/persons/{slug}/identities")
@audited("person.link")
async def add_identity(request: web.Request) -> web.Response:
    slug = _slug(request)
    body = await read_object(request, required=["identity"])
    identity = field(body, "identity", parse_identity)
    people = request.app[DATABASE_KEY].people
    _, added = await people.add_identity(slug, identity)
    note(request, slug=slug, identity=str(identity), linked=added)
    profile = profile_json(*await people.profile(slug))
    return created(profile, _location(slug)) if added else web.json_response(profile)


@routes.post("/api/v1/persons/{slug}/link-codes")
@audited("person.link_code")
async def new_link_code(request: web.Request) -> web.Response:
    slug = _slug(request)
    body = await read_object(request, optional=["ttl_seconds"], empty_ok=True)
    ttl = field(body, "ttl_seconds", check_ttl)
    made = await request.app[DATABASE_KEY].people.new_link_code(slug, ttl)
    note(request, slug=slug, expires_at=made.to_json()["expires_at"])
    return created(made.to_json(), _location(slug))  # the code is shown once: its person


@routes.post("/api/v1/link-codes/redeem")
@audited("person.link", "person.merge")
async def redeem_link_code(request: web.Request) -> web.Response:
    body = await read_object(request, required=["code", "identity"])
    code = field(body, "code", normalize_link_code)
    identity = field(body, "identity", parse_identity)
    people = request.app[DATABASE_KEY].people
    owner = await people.of_identity(identity)
    person = await people.redeem(code, identity)
    moved_from = owner.slug if owner is not None and owner.slug != person.slug else None
    merged = moved_from is not None and (await people.get(moved_from)).merged_into == person.slug
    if merged:
        note(request, "person.merge", slug=moved_from, into=person.slug, identity=str(identity))
    else:
        note(
            request, "person.link", slug=person.slug, identity=str(identity), moved_from=moved_from
        )
    return web.json_response(profile_json(*await people.profile(person.slug)))


@routes.get("/api/v1/persons/{slug}/erasure")
async def erasure_plan(request: web.Request) -> web.Response:
    read_query(request, [])
    slug = _slug(request)
    planned = await request.app[DATABASE_KEY].erasure.plan(slug)
    return web.json_response({"person": f"person:{slug}", "erases": planned.to_json()})


@routes.delete("/api/v1/persons/{slug}")
@audited("person.erase")
async def erase_person(request: web.Request) -> web.Response:
    params = read_query(request, ["erase"])
    slug = _slug(request)
    database = request.app[DATABASE_KEY]
    if params.get("erase") != "true":
        planned = await database.erasure.plan(slug)
        raise InvalidInput(
            f"erasing person:{slug} removes {planned.describe()}, for good; "
            "to erase them, add ?erase=true",
            code="erase_not_confirmed",
        )
    went = await _erase(request, slug)
    note(request, slug=slug, erased=went.to_json())
    person, identities = await database.people.profile(slug)
    return web.json_response({**profile_json(person, identities), "erased": went.to_json()})


async def _erase(request: web.Request, slug: str) -> Erasure:
    """Stop the turns running in the person's threads, erase, then start each conversation run
    there fresh: no turn answers after the erasure, no agent session keeps what was said."""
    database, host = request.app[DATABASE_KEY], request.app[HOST_KEY]
    runs = [
        run
        for t in await database.erasure.threads_of(slug)
        for run in await database.runs.of_thread(t)
    ]
    for run in runs:
        await host.cancel(run.id)
    went = await database.erasure.erase(slug)
    for run in runs:
        if run.kind is RunKind.CONVERSATION and run.role in request.app[ROLES_KEY]:
            await host.start_fresh(run.id)
    return went
