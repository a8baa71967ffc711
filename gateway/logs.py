"""Structured logs: every line of the process on stderr, as one JSON object or as text.

`configure_logging(settings)` is called once by whoever runs the app. Each line carries the id of
the request being handled when it was written (`current_request_id`, set by the app's tracing
middleware), so a request's access line and everything logged while handling it can be joined.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

from core.model.timeline import rfc3339
from gateway.settings import Settings

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, logger, message, request id, its `fields`,
    and the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "at": rfc3339(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            line["request_id"] = request_id
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class RequestIdFilter(logging.Filter):
    """Stamp the id of the request being handled (if any) on each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id.get()
        return True


def configure_logging(settings: Settings) -> None:
    """Send every log line of the process to stderr, as JSON or as text, at the set level."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
