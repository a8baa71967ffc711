"""Every failure of an HTTP request becomes `{"error": {"code", "message"}}`, here and only here.

Four families of failure reach this middleware, and each is translated by its class, never by
its message:

- core's domain errors (`RolecallError`): `InvalidInput` 422, `TooLarge` 413, `Gone` 410,
  `NotFound` 404, `NotAllowed` 403, `Conflict` 409, `LimitReached` 429; the error's own `code`
  and `message` go to the client.
- the gateway's `ApiError`: what only HTTP knows about — a body that is not JSON (400), a missing
  or wrong token (401), a database that does not answer the health check (503).
- storage's `StorageUnavailable`: the database cannot be reached for now (restarting, connection
  lost, no connection left): 503 `database_unavailable` with `Retry-After`, never a 500.
- aiohttp's HTTP exceptions: an unknown route (404), a method the route does not take (405, with
  its `Allow` header), a body over `client_max_size` (413); and a body whose framing breaks off
  while it is read (`RequestPayloadError`, 400 `malformed_request`), or a client that hung up
  before its body was read (400 `client_disconnected`, logged at INFO: nobody reads that answer).

Anything else is a bug: the client gets 500 `internal` with a generic message (the response's
`X-Request-Id` header names the request), the traceback goes only to the server log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aiohttp import web
from aiohttp.typedefs import Handler

from core.model.errors import (
    Conflict,
    Gone,
    InvalidInput,
    LimitReached,
    NotAllowed,
    NotFound,
    RolecallError,
    TooLarge,
)
from core.storage.errors import StorageUnavailable

log = logging.getLogger("rolecall.gateway")

# Domain error class -> HTTP status. The first class the error is an instance of wins.
DOMAIN_STATUS: tuple[tuple[type[RolecallError], int], ...] = (
    (InvalidInput, 422),
    (TooLarge, 413),
    (Gone, 410),
    (NotFound, 404),
    (NotAllowed, 403),
    (Conflict, 409),
    (LimitReached, 429),
    (RolecallError, 400),
)

# Codes for aiohttp's own HTTP exceptions, by status.
HTTP_CODES: Mapping[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "body_too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


class ApiError(Exception):
    """A failure only the HTTP layer knows about, with its status, code and message."""

    def __init__(
        self, status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def error_response(
    status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.json_response(
        {"error": {"code": code, "message": message}}, status=status, headers=headers
    )


def domain_status(error: RolecallError) -> int:
    return next(status for cls, status in DOMAIN_STATUS if isinstance(error, cls))


def _from_http_exception(request: web.Request, exc: web.HTTPException) -> web.Response:
    headers: dict[str, str] = {}
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        headers["Allow"] = exc.headers.get("Allow", allowed)
        message = f"{request.method} is not allowed on {request.path}; allowed: {allowed}"
    elif isinstance(exc, web.HTTPNotFound):
        message = f"no such route: {request.method} {request.path}"
    elif isinstance(exc, web.HTTPRequestEntityTooLarge):
        message = f"the request body is larger than the limit of {request.client_max_size} bytes"
    else:
        message = exc.reason
    code = HTTP_CODES.get(exc.status, "server_error" if exc.status >= 500 else "bad_request")
    return error_response(exc.status, code, message, headers=headers)


def database_unavailable(request: web.Request, error: StorageUnavailable) -> web.Response:
    """503 `database_unavailable` with `Retry-After`: nothing the client sent was wrong, and the
    same request may succeed once the database is back. One warning line, no traceback: an
    outage fails every request for a while, and the cause is the database's, not a bug here."""
    log.warning("%s %s: the database is unavailable: %s", request.method, request.path, error)
    return error_response(
        503,
        "database_unavailable",
        f"the database is unavailable for now ({error.reason}); "
        f"try again in {error.retry_after} seconds",
        headers={"Retry-After": str(error.retry_after)},
    )


def _client_gone(request: web.Request) -> bool:
    # A reset from elsewhere (a socket of our own to another server) is no client's doing.
    transport = request.transport
    return transport is None or transport.is_closing()


def translate(request: web.Request, error: Exception) -> web.Response:
    """The response for a request that failed with `error`. An HTTP exception below 400 (a
    redirect and the like) is an answer, not a failure: it is raised again."""
    if isinstance(error, RolecallError):
        return error_response(domain_status(error), error.code, error.message)
    if isinstance(error, ApiError):
        return error_response(error.status, error.code, error.message, headers=error.headers)
    if isinstance(error, StorageUnavailable):
        return database_unavailable(request, error)
    if isinstance(error, ConnectionResetError) and _client_gone(request):  # before its body
        log.info("%s %s: the client went away mid-request", request.method, request.path)
        return error_response(400, "client_disconnected", "the connection closed mid-request")
    if isinstance(error, web.RequestPayloadError):  # the body's framing broke off mid-read
        return error_response(400, "malformed_request", f"the request body is malformed: {error}")
    if isinstance(error, web.HTTPException):
        if error.status < 400:
            raise error
        return _from_http_exception(request, error)
    log.error(
        "unexpected error handling %s %s",
        request.method,
        request.path,
        exc_info=(type(error), error, error.__traceback__),
    )
    return error_response(
        500,
        "internal",
        "an unexpected error occurred; the server log has the details "
        "(look for this response's X-Request-Id)",
    )


@web.middleware
async def translate_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """`translate` as a middleware of its own, for applications without the gateway's edge."""
    try:
        return await handler(request)
    except Exception as error:
        return translate(request, error)
