"""The roles the gateway serves, from `ROLECALL_ROLES_DIR`, and their HTTP routes.

    GET /api/v1/roles[?after=NAME&limit=N]
                               the roles by name: `{"roles": [role, …], "next": NAME|null}`;
                               every one without `limit`, else a page of at most N (1-500)
                               after the name `after`
    GET /api/v1/roles/{name}   one role; unknown → 404 `role_not_found`

Roles are read once, before the application is built; a bad manifest stops start-up with one
line naming the file and the field. The default directory may be missing (no roles); a directory
the operator set must exist.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.requests import ROLES_KEY, query_int, read_query
from core.model.errors import NotFound
from core.model.retention import written
from core.model.roles import ManifestError, Role, load_roles
from core.storage.pages import MAX_PAGE
from gateway.settings import Settings

routes = web.RouteTableDef()


def configured_roles(settings: Settings) -> dict[str, Role]:
    """The roles in `settings.roles_dir`; raises `ManifestError` naming the file and field."""
    directory = settings.roles_dir
    if not directory.exists() and "roles_dir" not in settings.model_fields_set:
        return {}
    if not directory.is_dir():
        raise ManifestError(f"ROLECALL_ROLES_DIR: {directory} is not a directory")
    return load_roles(directory)


def role_json(role: Role) -> dict[str, Any]:
    """The role as loaded, defaults filled in. Secrets appear only as the names of the settings
    holding them: a manifest holds nothing else (`core.model.roles.role`), and no value is read
    here. A retention is as a manifest writes it (`30d`, `forever`; null: the gateway's
    default), not as an ISO 8601 duration."""
    body = {"address": role.address, **role.model_dump(mode="json")}
    kept = role.retention
    body["retention"] = {
        name: written(getattr(kept, name)) if getattr(kept, name) is not None else None
        for name in ("messages", "memory", "transcripts", "deliveries")
    }
    return body


@routes.get("/api/v1/roles")
async def list_roles(request: web.Request) -> web.Response:
    params = read_query(request, ["after", "limit"])
    roles = request.app[ROLES_KEY]
    names = [name for name in sorted(roles) if name > params.get("after", "")]
    shown = names
    if "limit" in params:
        shown = names[: query_int(params, "limit", default=MAX_PAGE, low=1, high=MAX_PAGE)]
    more = len(shown) < len(names)
    return web.json_response(
        {"roles": [role_json(roles[name]) for name in shown], "next": shown[-1] if more else None}
    )


@routes.get("/api/v1/roles/{name}")
async def show_role(request: web.Request) -> web.Response:
    read_query(request, [])
    name = request.match_info["name"]
    role = request.app[ROLES_KEY].get(name)
    if role is None:
        raise NotFound(f"no role named {name!r}", code="role_not_found")
    return web.json_response(role_json(role))
