"""How every HTTP route reads a request — the API's under `/api/v1`, the widget's, the webhooks'.

Routes are thin: read the request with the helpers here, call the repository, serialize. Reading is
strict, so that a typo is an error rather than a silently ignored field:

- A body is one JSON object. Not JSON (or not UTF-8) is 400 `invalid_json`; JSON that is not an
  object is 422 `invalid_body`; a field the route does not know is 422 `unknown_field`, a required
  one absent is 422 `missing_field` — each naming the field.
- Every field's value holds only what storage keeps (`core.model.values`: Unicode scalar values
without
  NUL, finite numbers within 64 bits, bounded nesting), else 422 naming the field and why.
- Each field is parsed by core's own validators (`parse_address`, `check_text`, …); their errors
  keep their class and code (so too-long text stays 413) and gain the field's name in the message.
- Query parameters likewise: unknown or repeated is 422; numbers are plain decimal digits within
  the stated bounds (never beyond what every JSON client reads exactly). A route that reads a
  body takes no query parameters at all. (Every query value and path parameter has passed
  `core.model.values` already, in the gateway's one middleware: `check_request_values`.)
- An answer that creates something is 201 with a `Location` header (`created`).
- A body may come compressed (`Content-Encoding: gzip` or `deflate`, decoded here by
  `read_body`, never past the body limit once decoded); one that does not decode is 400
  `invalid_encoding`. Any other coding is 415 `unsupported_encoding` (`check_encoding`, also in
  the middleware), before the body is read.

What the routes need from the application is named here with a typed key, so that route modules do
not import the app that wires them.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Collection, Mapping
from ipaddress import IPv4Network, IPv6Network, ip_address
from typing import Any, TypeVar

from aiohttp import web

from channels.edge.errors import ApiError
from core.engine.host import RunHost
from core.model.errors import InvalidInput, RolecallError
from core.model.roles import Role
from core.model.roles.roster import Roster
from core.model.values import check_text, check_value
from core.storage import Database
from core.storage.threads_store import ThreadRepository

DATABASE_KEY = web.AppKey("database", Database)
HOST_KEY = web.AppKey("host", RunHost)
ROLES_KEY = web.AppKey("roles", Mapping[str, Role])
ROSTER_KEY = web.AppKey("roster", Roster)
"""The roles accepted in conversations and as assignees (`core.model.roles.roster`)."""

# Cursors and counts stay within the integers every JSON client reads exactly (JavaScript's
# Number.MAX_SAFE_INTEGER), far inside what storage holds even after it adds one.
MAX_QUERY_INT = 2**53 - 1
_DIGITS = re.compile(r"[0-9]{1,16}")

T = TypeVar("T")


def repository(request: web.Request) -> ThreadRepository:
    """The thread repository of the app handling `request`."""
    return request.app[DATABASE_KEY].threads


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder for every body: `json.loads` with an argument builds a new one per call.
_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def _decode(text: str) -> Any:
    """`json.loads(text, parse_constant=_reject_constant)`, the BOM check included."""
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _decoder.decode(text)


# Content codings a body may come in, by `Content-Encoding` value, as zlib's `wbits`: gzip, or
# zlib-wrapped deflate (what HTTP's "deflate" means). The gateway's application reads bodies
# undecoded (`auto_decompress=False`) so that a body which does not decode is our 400, here.
_CODINGS: Mapping[str, int | None] = {
    "": None,
    "identity": None,
    "gzip": 16 + zlib.MAX_WBITS,
    "x-gzip": 16 + zlib.MAX_WBITS,
    "deflate": zlib.MAX_WBITS,
}


def check_encoding(request: web.Request) -> int | None:
    """The zlib `wbits` of the request's `Content-Encoding` (None: not encoded); 415 for a coding
    the gateway does not decode (brotli, zstd, several codings in a row, …)."""
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    if coding not in _CODINGS:
        raise ApiError(
            415,
            "unsupported_encoding",
            f"Content-Encoding {coding[:40]!r} is not supported; send the body as it is, or "
            "with gzip or deflate",
        )
    return _CODINGS[coding]


async def read_body(request: web.Request) -> bytes:
    """The request body, decoded from its `Content-Encoding`. Not that coding is 400
    `invalid_encoding`; decoded past the body limit (`client_max_size`), 413."""
    wbits = check_encoding(request)
    raw = await request.read()  # 413 past the limit as it comes
    if wbits is None:
        return raw
    limit = request.client_max_size
    decoder = zlib.decompressobj(wbits)
    try:
        body = decoder.decompress(raw, limit + 1)
        complete = decoder.eof and not decoder.unused_data
    except zlib.error as exc:
        raise ApiError(
            400, "invalid_encoding", f"the body is not {_coding(request)} data: {exc}"
        ) from None
    if len(body) > limit:
        raise ApiError(
            413,
            "body_too_large",
            f"the request body, decoded, is larger than the limit of {limit} bytes",
        )
    if not complete:
        raise ApiError(
            400, "invalid_encoding", f"the body is not one complete {_coding(request)} stream"
        )
    return body


def _coding(request: web.Request) -> str:
    return request.headers.get("Content-Encoding", "").strip().lower()


def check_request_values(request: web.Request) -> None:
    """Every query parameter (name and value) and every path parameter of the request holds
    acceptable text (`core.model.values`: no NUL, no lone surrogate), else 422 naming it. The
    gateway's
    middleware calls this for every route, before its handler."""
    for name, value in request.query.items():
        check_text(name, "a query parameter's name")
        check_text(value, f"query parameter {name!r}")
    for name, value in request.match_info.items():
        check_text(value, f"path parameter {name!r}")


async def read_object(
    request: web.Request,
    *,
    required: Collection[str] = (),
    optional: Collection[str] = (),
    empty_ok: bool = False,
) -> dict[str, Any]:
    """The body as a JSON object holding only the named fields, the required ones present; the
    request takes no query parameters. `empty_ok`: no body at all reads as `{}` (for actions that
    take no fields)."""
    read_query(request, ())
    raw = await read_body(request)
    if empty_ok and not raw.strip():
        return {}
    try:
        body = _decode(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_json", "the request body is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidInput(
            f"the request body must be a JSON object, not {_json_type(body)}", code="invalid_body"
        )
    allowed = [*required, *optional]
    for name in body:
        if name not in allowed:
            raise InvalidInput(
                f"unknown field {name!r}; this request takes {_names(allowed)}",
                code="unknown_field",
            )
    for name in required:
        if name not in body:
            raise InvalidInput(f"missing required field {name!r}", code="missing_field")
    for name, value in body.items():
        check_value(value, name)
    return body


def created(body: Any, location: str) -> web.Response:
    """201 Created: `body` as JSON, and `Location`, the URL (a path on this gateway) that reads
    what the request created — or, for what is shown only once (a token, a link code), what it
    belongs to. Every 201 the gateway answers is made here."""
    return web.json_response(body, status=201, headers={"Location": location})


def field(body: Mapping[str, Any], name: str, parse: Callable[[Any], T]) -> T:
    """Parse `body[name]` (None when absent) with a core validator; errors name the field."""
    return named(name, parse, body.get(name))


def named(name: str, parse: Callable[[Any], T], raw: Any) -> T:
    try:
        return parse(raw)
    except RolecallError as error:
        raise type(error)(f"{name}: {error.message}", code=error.code) from None


def read_query(request: web.Request, allowed: Collection[str]) -> dict[str, str]:
    """The query parameters, each at most once and all of them known."""
    params: dict[str, str] = {}
    for name, value in request.query.items():
        if name not in allowed:
            raise InvalidInput(
                f"unknown query parameter {name!r}; this request takes "
                f"{_names(allowed) if allowed else 'no query parameters'}",
                code="unknown_parameter",
            )
        if name in params:
            raise InvalidInput(
                f"query parameter {name!r} is given more than once", code="repeated_parameter"
            )
        params[name] = value
    return params


def query_int(
    params: Mapping[str, str], name: str, *, default: int, low: int, high: int = MAX_QUERY_INT
) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    value = int(raw) if _DIGITS.fullmatch(raw) else None
    if value is None or not low <= value <= high:
        raise InvalidInput(
            f"query parameter {name!r} must be a whole number from {low} to {high}, not {raw!r}",
            code="invalid_parameter",
        )
    return value


_ID = re.compile(r"[0-9a-f]{32}")


def is_id(raw: str) -> bool:
    """Whether `raw` has the shape of an id Rolecall hands out (a UUIDv7 in lowercase hex)."""
    return _ID.fullmatch(raw) is not None


def query_id(params: Mapping[str, str], name: str, what: str) -> str | None:
    """An id given in the query (32 lowercase hex digits, as every id Rolecall hands out), or
    None when absent: a malformed one is 422 `invalid_parameter`, never an empty page."""
    raw = params.get(name)
    if raw is not None and not is_id(raw):
        raise InvalidInput(
            f"query parameter {name!r} must be {what} (32 hex digits), not {raw!r}",
            code="invalid_parameter",
        )
    return raw


def query_bool(params: Mapping[str, str], name: str) -> bool:
    raw = params.get(name, "false")
    if raw not in ("true", "false"):
        raise InvalidInput(
            f"query parameter {name!r} must be true or false, not {raw!r}",
            code="invalid_parameter",
        )
    return raw == "true"


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def _names(names: Collection[str]) -> str:
    return ", ".join(repr(name) for name in names) if names else "no fields"


Proxies = tuple[IPv4Network | IPv6Network, ...]
"""The load balancers whose `X-Forwarded-For` is believed (`ROLECALL_TRUSTED_PROXIES`)."""


def client_address(request: web.Request, trusted: Proxies) -> str:
    """Who sent the request: the connection's address, or — when that is a trusted proxy — the
    address `X-Forwarded-For` names, read from the right past every trusted hop (a client can
    put anything on the left; only the hops our proxies appended are believed)."""
    remote = request.remote or ""
    if not trusted or not _trusted(remote, trusted):
        return remote
    hops = [hop.strip() for hop in request.headers.get("X-Forwarded-For", "").split(",")]
    for hop in reversed([h for h in hops if h]):
        if not _trusted(hop, trusted):
            return hop
    return remote


def _trusted(address: str, trusted: Proxies) -> bool:
    try:
        ip = ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)
