"""Named operator tokens over HTTP (`core.model.operators`), for operators.

    POST   /api/v1/tokens          make one: {name} -> 201, with the token (shown only here)
    GET    /api/v1/tokens          every token, revoked ones too, oldest first (never a token)
    GET    /api/v1/tokens/{name}   one: when it was made, last used, revoked
    DELETE /api/v1/tokens/{name}   revoke it: refused from now on, on every replica

`default` is the gateway's configured token (ROLECALL_API_TOKEN or var/api-token): listed, and
revocable like any other, but never made here. Making and revoking are audited (`token.create`,
`token.revoke`); revoking clears this replica's cache of tokens and tells the others
(`gateway.operators`).
"""

from __future__ import annotations

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, created, field, read_object, read_query
from core.model.errors import RolecallError
from core.model.operators import check_token_name, token_not_found
from gateway.api.audit import audited, note
from gateway.operators import OPERATORS_KEY

routes = web.RouteTableDef()


def _location(name: str) -> str:
    return f"/api/v1/tokens/{name}"


def _name(request: web.Request) -> str:
    """The path's name; one that could never be a token's is simply not found."""
    raw = request.match_info["name"]
    try:
        return check_token_name(raw)
    except RolecallError:
        raise token_not_found(raw) from None


@routes.post("/api/v1/tokens")
@audited("token.create")
async def create_token(request: web.Request) -> web.Response:
    body = await read_object(request, required=["name"])
    name = field(body, "name", check_token_name)
    made, token = await request.app[DATABASE_KEY].operators.create(name)
    note(request, name=name)
    return created({**made.to_json(), "token": token}, _location(name))


@routes.get("/api/v1/tokens")
async def list_tokens(request: web.Request) -> web.Response:
    read_query(request, [])
    tokens = await request.app[DATABASE_KEY].operators.list()
    return web.json_response({"tokens": [t.to_json() for t in tokens]})


@routes.get("/api/v1/tokens/{name}")
async def show_token(request: web.Request) -> web.Response:
    read_query(request, [])
    name = _name(request)
    found = await request.app[DATABASE_KEY].operators.get(name)
    if found is None:
        raise token_not_found(name)
    return web.json_response(found.to_json())


@routes.delete("/api/v1/tokens/{name}")
@audited("token.revoke")
async def revoke_token(request: web.Request) -> web.Response:
    read_query(request, [])
    name = _name(request)
    revoked = await request.app[DATABASE_KEY].operators.revoke(name)
    request.app[OPERATORS_KEY].revoked()
    note(request, name=name)
    return web.json_response(revoked.to_json())
