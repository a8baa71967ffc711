"""Structured logs: every line of the process on stderr, as one JSON object or as text.

`configure_logging(settings)` is called once by whoever runs the app. Each line carries the id of
the request being handled when it was written (`current_request_id`, set by the app's tracing
middleware), so a request's access line and everything logged while handling it can be joined;
and, when it was written inside a sampled OpenTelemetry trace (a request's, a turn's, a
delivery's: docs/tracing.md), that trace's id, to find the trace from the line.

The format is `ROLECALL_LOG_FORMAT`: `json` or `text` when the setting says so, else (`auto`)
text for a person when stderr is a terminal and JSON for whatever collects it otherwise
(`chosen_format`). Alembic's own lines (one a schema revision) are left out below debug level:
the upgrade says in one line what it did (`core.storage.migrate`).
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal, Protocol

from core.model.timeline import rfc3339
from core.tracing import current_trace_id
from gateway.settings import Settings

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

Format = Literal["json", "text"]


class _Stream(Protocol):
    def isatty(self) -> bool: ...


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object: time, level, logger, message, request id, trace id, its
    `fields`, and the traceback when there is one."""

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
        trace_id = getattr(record, "trace_id", None)
        if trace_id is not None:
            line["trace_id"] = trace_id
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """A log record as a line for a person: local time, level, logger, message, and the request
    id and trace id in brackets when there are; a traceback follows on the lines after it."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        request_id = getattr(record, "request_id", None)
        trace_id = getattr(record, "trace_id", None)
        tags = [t for t in (request_id, f"trace {trace_id}" if trace_id else None) if t]
        return f"{line} [{' '.join(tags)}]" if tags else line


class RequestIdFilter(logging.Filter):
    """Stamp the id of the request being handled (if any) on each record, and the id of the
    trace it was written in (if sampled)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id.get()
        if getattr(record, "trace_id", None) is None:
            record.trace_id = current_trace_id()
        return True


def chosen_format(setting: Literal["auto", "json", "text"], stream: _Stream) -> Format:
    """The format lines written to `stream` take: the setting's when it names one, else text
    when `stream` is a terminal and JSON when it is not (a file, a pipe, a collector)."""
    if setting != "auto":
        return setting
    try:
        return "text" if stream.isatty() else "json"
    except ValueError:  # a closed stream: nobody reads it, JSON is as good as anything
        return "json"


def configure_logging(settings: Settings) -> None:
    """Send every log line of the process to stderr, as JSON or as text, at the set level."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if chosen_format(settings.log_format, sys.stderr) == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    debug = settings.log_level == "debug"
    logging.getLogger("alembic").setLevel(logging.NOTSET if debug else logging.WARNING)
