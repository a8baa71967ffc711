"""Which channels a thread is bound to, and where its messages stand there, for operators.

    GET /api/v1/threads/{id}/channels[?first=SEQ&last=SEQ]

`{"slack": [dm, …], "widget": [{"person", "identity"}, …]}`. A Slack `dm` is a DM of a role's
app bound to the thread — `{"role", "team_id", "channel_id", "bound_at", "since_position",
"cursor", "deliveries": [{"message_id", "seq", "state", "ts"}, …]}` — with the state of each
message whose seq is in `first..last` (at most `MAX_SPAN` seqs; none without them), by the rule
of `core.model.deliveries` (`posted`, `received`, `pending`, `failed`, `deleting`, `deleted`,
`withdrawn`, `erased`, `before`). `widget` lists the people of the thread who have a widget
identity: the widget streams a conversation live to whoever opens it, so it keeps nothing per
message to report.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, query_int, read_query
from core.model.errors import InvalidInput
from core.model.timeline import ThreadId, rfc3339
from core.storage.deliveries_reads import SlackDm, ThreadChannels
from core.storage.rows import from_micros

routes = web.RouteTableDef()

MAX_SPAN = 500
"""Seqs one request may ask the delivery state of."""


def _dm_json(dm: SlackDm) -> dict[str, Any]:
    return {
        "role": dm.role,
        "team_id": dm.team_id,
        "channel_id": dm.channel_id,
        "bound_at": rfc3339(from_micros(dm.bound_at)),
        "since_position": dm.since,
        "cursor": dm.cursor,
        "deliveries": [
            {"message_id": d.message_id, "seq": d.seq, "state": d.state.value, "ts": d.ts}
            for d in dm.deliveries
        ],
    }


def channels_json(found: ThreadChannels) -> dict[str, Any]:
    return {
        "slack": [_dm_json(dm) for dm in found.slack],
        "widget": [{"person": w.person, "identity": w.identity} for w in found.widget],
    }


@routes.get("/api/v1/threads/{id}/channels")
async def thread_channels(request: web.Request) -> web.Response:
    params = read_query(request, ["first", "last"])
    if ("first" in params) != ("last" in params):
        raise InvalidInput(
            "'first' and 'last' go together: the seqs whose delivery state to read",
            code="missing_parameter",
        )
    first = query_int(params, "first", default=1, low=1)
    last = query_int(params, "last", default=0, low=1)
    if "first" in params and not first <= last < first + MAX_SPAN:
        raise InvalidInput(
            f"'last' must be from 'first' to {MAX_SPAN - 1} seqs after it, not {last}",
            code="invalid_parameter",
        )
    database = request.app[DATABASE_KEY]
    thread_id = ThreadId(request.match_info["id"])
    await database.threads.get(thread_id)  # 404 thread_not_found
    found = await database.console.channels_of(thread_id, first, last)
    return web.json_response(channels_json(found))
