"""Requests aiohttp's parser cannot read, answered in the gateway's JSON shape.

A request line that is not HTTP, a header line over the limit, too many headers, broken chunked
framing: aiohttp's parser refuses these before any route or middleware sees a request, and its
`RequestHandler.handle_error` answers with a plain-text 400 (and logs a traceback at ERROR). For
the gateway's applications that answer becomes `{"error": {"code", "message"}}`:

- a header line (or the request line) over the parser's limit, or more headers than it takes:
  431 `headers_too_large`;
- anything else the parser refuses: 400 `malformed_request`, the message saying what (its first
  line only: aiohttp's message goes on to quote the offending bytes, which may hold a secret);
- what aiohttp itself would answer with 500 or 504 (a handler that escaped every middleware, a
  handler timeout) keeps its status, in the same shape, the traceback going to the log as before.

A client's malformed request is logged at INFO, one line, no traceback: it is the client's
mistake, not the server's. The connection is closed after the answer, as aiohttp does.

`handle_error` is aiohttp's private API (`aiohttp.web_protocol`), so `pyproject.toml` pins the
aiohttp versions this is known to work with, and `tests/api/test_malformed_http.py` fails if an
upgrade changes it. The replacement is scoped: only connections of an application passed to
`answer_in_json` are answered in JSON; any other aiohttp server in the process (a test's fake
Slack, say) keeps aiohttp's own answer.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from channels.edge.errors import error_response

log = logging.getLogger("rolecall.gateway")

JSON_ERRORS_KEY = web.AppKey("malformed_in_json", bool)

_aiohttp_handle_error = RequestHandler.handle_error


def answer_in_json(app: web.Application) -> None:
    """Answer requests to `app` that aiohttp's parser refuses in the gateway's JSON shape."""
    app[JSON_ERRORS_KEY] = True
    if RequestHandler.handle_error is not _handle_error:
        RequestHandler.handle_error = _handle_error  # type: ignore[method-assign]


def classify(status: int, exc: BaseException | None) -> tuple[int, str, str]:
    """The (status, code, message) for an error aiohttp's request handler reports."""
    if status >= 500:
        if status == 504:
            return 504, "timeout", "the request took too long to handle"
        return (
            500,
            "internal",
            "an unexpected error occurred; the server log has the details",
        )
    if isinstance(exc, LineTooLong) or (
        isinstance(exc, BadHttpMessage) and "too many headers" in exc.message.lower()
    ):
        return (
            431,
            "headers_too_large",
            "the request line or a header is longer than this server reads, or there are too "
            "many headers",
        )
    detail = exc.message if isinstance(exc, HttpProcessingError) else ""
    first = detail.strip().splitlines()[0].rstrip(":").strip() if detail.strip() else ""
    message = f"the request is not well-formed HTTP: {first}" if first else "malformed request"
    return 400, "malformed_request", message


def _ours(handler: RequestHandler) -> bool:
    # The Server's request handler is the bound `Application._handle` of the app it serves.
    serving: Any = getattr(handler, "_request_handler", None)
    app = getattr(serving, "__self__", None)
    return isinstance(app, web.Application) and app.get(JSON_ERRORS_KEY, False)


def _handle_error(
    self: RequestHandler,
    request: BaseRequest,
    status: int = 500,
    exc: BaseException | None = None,
    message: str | None = None,
) -> web.StreamResponse:
    if not _ours(self):
        return _aiohttp_handle_error(self, request, status, exc, message)
    answer_status, code, text = classify(status, exc)
    if answer_status >= 500:
        log.error("error handling a request from %s", request.remote, exc_info=exc)
    else:
        log.info(
            "malformed request from %s: %s %s (%s)",
            request.remote,
            answer_status,
            code,
            type(exc).__name__ if exc is not None else "no detail",
        )
    if request.writer.output_size > 0:  # as aiohttp: part of an answer went out already
        raise ConnectionError("the response is sent already; cannot send the error")
    response = error_response(answer_status, code, text)
    response.force_close()
    return response
