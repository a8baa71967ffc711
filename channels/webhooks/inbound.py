"""`POST /hooks/{source}`: another system says that one of its items changed.

In order, each step stopping the request at the first problem and storing nothing:

1. the source: unknown → 404 `source_not_found`;
2. the signature, over the raw body (`signatures`): bad, missing or stale → 401
   `invalid_signature`; a signed request without its delivery id (or GitHub event) → 400
   `missing_header`;
3. the body: not JSON → 400 `invalid_json` (a compressed body is decoded first, as on every
   route: `channels.edge.requests.read_body`);
4. the payload's values (`core.model.values`, checked by `core.model.webhooks.map_delivery`): a lone
   surrogate, a NUL, a number storage cannot hold, nesting too deep → 422 naming the field;
5. the mapping (`core.model.webhooks`): a payload that does not map → 422 with the reason;
6. the delivery, committed with everything it does (`core.storage.webhooks_store`) → 200.

The 200 is sent after the commit, with what was done: `{"source", "delivery_id", "duplicate",
"ignored", "task", "events", "notes"}`. A delivery id seen before is 200 with `"duplicate": true`
and changes nothing. Runs watching the item are nudged by the committed task events, like for any
task change (the run host's after-commit listener), not from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from channels.edge.errors import ApiError
from channels.edge.requests import DATABASE_KEY, read_body, read_query
from channels.webhooks.signatures import MissingHeader, SignatureError
from channels.webhooks.sources import InboundSource
from core.model.webhooks import ItemUpdate, map_delivery
from core.storage.webhooks_store import Received

SOURCES_KEY = web.AppKey("webhook_sources", Mapping[str, InboundSource])
PATH = "/hooks/{source}"


async def receive(request: web.Request) -> web.Response:
    name = request.match_info["source"]
    inbound = request.app[SOURCES_KEY].get(name)
    if inbound is None:
        raise ApiError(404, "source_not_found", f"no webhook source named {name!r} here")
    read_query(request, [])
    body = await read_body(request)
    try:
        delivered = inbound.verifier.verify(body, request.headers)
    except SignatureError as exc:
        raise ApiError(401, "invalid_signature", str(exc)) from None
    except MissingHeader as exc:
        raise ApiError(400, "missing_header", str(exc)) from None
    mapped = map_delivery(inbound.source, delivered.event, _json(body))
    received = await request.app[DATABASE_KEY].webhooks.receive(name, delivered.delivery_id, mapped)
    notes = list(mapped.notes) if isinstance(mapped, ItemUpdate) and received.task else []
    return web.json_response(
        {"source": name, "delivery_id": delivered.delivery_id, **answer(received), "notes": notes}
    )


def answer(received: Received) -> dict[str, Any]:
    return {
        "duplicate": received.duplicate,
        "ignored": received.ignored,
        "task": received.task.to_json() if received.task is not None else None,
        "events": [event.to_json() for event in received.events],
    }


def _json(body: bytes) -> object:
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_json", "the body is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "invalid_json", f"the body is not valid JSON: {exc}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
