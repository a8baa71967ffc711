"""How console pages get their data: in-process requests to the operator API, as the signed-in
operator.

A page never reads the database itself. It asks `ConsoleApi` for `GET /api/v1/…` (and, for the
actions of later pages, `POST`/`PATCH`/`DELETE`), and the request is handed to the very handler
that answers that route over HTTP: the same parsing of the query and body, the same checks, the
same JSON — and, for a change, the same `@audited` record, whose actor is the session's operator
token name and whose client is the browser's address (`gateway.api.audit`). So the console can
do nothing the operator API cannot, and everything it shows is what the API answers.

The request is made in process, not over the network: it is a copy of the browser's request
(`Request.clone`) with the API's method, path and query, no cookie, the operator identity the
gateway's edge would have put there (`OPERATOR_KEY`), and the route matched by the application's
own router. What only the edge adds to a request over HTTP is left out: the access log line, the
request metrics, and the operator token check (the console checked the session's token itself).
An API refusal (`{"error": {"code", "message"}}`) becomes `ApiRefused`, which pages show as the
sentence it is; the gateway's own failures become a refusal too, never a stack.

`ConsoleApi` is made from the browser's request before its body is read (`aiohttp` copies a
request only until then); a copy's body is the JSON the page gives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from aiohttp import web
from yarl import URL

from channels.edge.errors import translate
from channels.edge.requests import check_request_values
from gateway.operators import OPERATOR_KEY, Operator

API_PREFIX = "/api/v1/"
TOOLS_PREFIX = "/api/v1/tools"

QueryValue = str | int | bool | None


class ApiRefused(Exception):
    """The operator API refused or failed a console's request: its status, code and sentence."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    status: int
    body: Any
    headers: Mapping[str, str]


def api_path(*segments: str) -> str:
    """`/api/v1/` and the segments, each quoted (`api_path("threads", id, "timeline")`)."""
    return API_PREFIX + "/".join(quote(segment, safe=":@") for segment in segments)


def _query_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class ConsoleApi:
    """The operator API as one operator, from one browser request."""

    def __init__(self, base: web.Request, operator: Operator) -> None:
        self._base = base
        self.operator = operator

    async def get(self, path: str, query: Mapping[str, QueryValue] | None = None) -> Any:
        """The JSON the API answers `GET path?query` with."""
        return (await self.call("GET", path, query=query)).body

    async def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        body: Any = None,
    ) -> Answer:
        """The API's answer to `method path?query` (with `body` as JSON); `ApiRefused` for any
        answer of 400 or more."""
        if not path.startswith(API_PREFIX) or path.startswith(TOOLS_PREFIX):
            raise ValueError(f"the console calls the operator API only, not {path!r}")
        given = {name: _query_text(v) for name, v in (query or {}).items() if v is not None}
        url = URL(path, encoded=True).with_query(given)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        request = self._base.clone(method=method, rel_url=url, headers=headers)
        app = self._base.app
        match = await app.router.resolve(request)
        match.add_app(app)
        match.freeze()
        # What `web.Application._handle` does before calling a handler (both attributes are
        # among the ones aiohttp lets a request have: `Request.ATTRS`).
        request._match_info = match
        request._read_bytes = json.dumps(body).encode() if body is not None else b""
        request[OPERATOR_KEY] = self.operator
        try:
            check_request_values(request)
            response = await match.handler(request)
        except Exception as error:
            response = translate(request, error)
        return _answer(response)


def _answer(response: web.StreamResponse) -> Answer:
    if not isinstance(response, web.Response) or not isinstance(response.body, bytes):
        raise ApiRefused(500, "internal", "the API answered with something the console cannot read")
    text = response.body.decode("utf-8") if response.body else ""
    body = json.loads(text) if text and response.content_type == "application/json" else None
    if response.status >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            raise ApiRefused(response.status, "failed", f"the API answered {response.status}")
        raise ApiRefused(response.status, str(error.get("code")), str(error.get("message")))
    return Answer(status=response.status, body=body, headers=dict(response.headers))
