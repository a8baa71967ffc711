"""A role's agent memory over HTTP, for operators: find an entry, redact it.

    GET  /api/v1/roles/{role}/memory[?thread=&after=&limit=]   every entry, oldest first,
                                                              redacted ones included and marked
    POST /api/v1/roles/{role}/memory/{entry_id}/redact        {reason?} -> 201, the entry with
                                                              its redaction

Agents store and recall through the tools (`core.engine.tools`); this is the operator's view, which
sees every entry of the role whatever its thread. A redaction is appended beside the entry, never in
place of it; from then on no recall returns the entry. Redacting an entry twice is 409
`already_redacted` (the first redaction, who, when and why, stands). The operator token names no
one, so a redaction is recorded as made `by` "operator".

A role is known when this gateway serves it or when it has memory (a role whose manifest was
removed keeps its memory, which an operator may still need to redact); any other is 404
`role_not_found`.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.requests import (
    DATABASE_KEY,
    ROLES_KEY,
    created,
    field,
    is_id,
    query_id,
    query_int,
    read_object,
    read_query,
)
from core.model.errors import NotFound
from core.model.memory import MemoryEntry, check_redaction_reason
from core.model.timeline import ThreadId, rfc3339
from core.model.values import text_problem
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.audit import audited, note

REDACTED_BY = "operator"
_MAX_ROLE = 64

routes = web.RouteTableDef()


def entry_json(entry: MemoryEntry) -> dict[str, Any]:
    redaction = entry.redaction
    return {
        "id": entry.id,
        "role": entry.role,
        "at": rfc3339(entry.at),
        "thread_id": entry.thread_id,
        "thread_only": entry.thread_only,
        "payload": dict(entry.payload),
        "cleaned": entry.cleaned,
        "redacted": None
        if redaction is None
        else {"at": rfc3339(redaction.at), "by": redaction.by, "reason": redaction.reason},
    }


def entry_location(entry: MemoryEntry) -> str:
    """The URL that reads `entry` alone: its role's listing, after the id just before its own
    (ids are fixed-width hex, listed in order; the listing has no URL per entry)."""
    before = format(int(entry.id, 16) - 1, f"0{len(entry.id)}x")
    return f"/api/v1/roles/{entry.role}/memory?after={before}&limit=1"


async def _role(request: web.Request) -> str:
    name = request.match_info["role"]
    plausible = text_problem(name) is None and len(name) <= _MAX_ROLE
    memory = request.app[DATABASE_KEY].memory
    if plausible and (name in request.app[ROLES_KEY] or await memory.has_entries(name)):
        return name
    raise NotFound(f"no role named {name!r} is served here or has memory", code="role_not_found")


@routes.get("/api/v1/roles/{role}/memory")
async def list_memory(request: web.Request) -> web.Response:
    params = read_query(request, ["thread", "after", "limit"])
    thread = query_id(params, "thread", "a thread id")
    after = query_id(params, "after", "an entry id")
    limit = query_int(params, "limit", default=DEFAULT_PAGE, low=1, high=MAX_PAGE)
    role = await _role(request)
    found = await request.app[DATABASE_KEY].memory.list(
        role,
        thread_id=ThreadId(thread) if thread is not None else None,
        after=after,
        limit=limit + 1,
    )
    page = found[:limit]
    return web.json_response(
        {
            "entries": [entry_json(e) for e in page],
            "next": page[-1].id if len(found) > limit else None,
        }
    )


@routes.post("/api/v1/roles/{role}/memory/{entry_id}/redact")
@audited("memory.redact")
async def redact_memory(request: web.Request) -> web.Response:
    body = await read_object(request, optional=["reason"], empty_ok=True)
    reason = field(body, "reason", check_redaction_reason)
    role = await _role(request)
    entry_id = request.match_info["entry_id"]
    if not is_id(entry_id):
        raise NotFound(
            f"role {role!r} has no memory entry {entry_id!r}", code="memory_entry_not_found"
        )
    entry = await request.app[DATABASE_KEY].memory.redact(
        role, entry_id, by=REDACTED_BY, reason=reason
    )
    note(request, role=role, entry_id=entry.id, thread_id=entry.thread_id)
    return created(entry_json(entry), entry_location(entry))
