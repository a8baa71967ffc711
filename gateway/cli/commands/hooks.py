"""`rolecall hook test SOURCE FILE`: send FILE to a running gateway's `POST /hooks/SOURCE`, signed
as the source's sender signs it (Standard Webhooks, or `X-Hub-Signature-256` with GitHub's or the
generic kind's headers), with the secret from the setting the source's manifest names — to try a
source end to end before the real sender is pointed at it.

    rolecall hook test SOURCE FILE [--event NAME] [--id DELIVERY_ID] [--url URL]

The body is FILE's bytes as they are (the signature covers exactly them). Each call is a new
delivery (a fresh id) unless `--id` is given: the same id again is a repeated delivery, which the
gateway answers and does not act on. Prints the gateway's status and answer on one line; any
status but 2xx is a failure (one line on stderr, exit 1); a bad source, secret or FILE exits 2.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.cli._shared import EXIT_USAGE, Failure, command_group, gateway_url, read_settings
from gateway.cli.client import DEFAULT_URL

TIMEOUT = 30.0


def add_commands(commands: Any) -> None:
    hook = command_group(
        commands,
        "hook",
        "try the inbound webhook sources of a running gateway",
        "Inbound webhooks (docs/webhooks.md).",
    )
    help_text = "send FILE's JSON to a running gateway, signed as SOURCE's sender would"
    sub = hook.add_parser("test", help=help_text, description=help_text)
    sub.add_argument("source", metavar="SOURCE", help="a source in ROLECALL_SOURCES_DIR")
    sub.add_argument("file", metavar="FILE", help="the payload, JSON ('-' reads stdin)")
    sub.add_argument(
        "--event",
        metavar="NAME",
        help="GitHub's X-GitHub-Event (default: issue_comment for a payload with an issue and "
        "a comment, issues for one with an issue, else ping)",
    )
    sub.add_argument(
        "--id",
        dest="delivery_id",
        metavar="ID",
        help="the delivery id (default: a new one; the same id again is a repeated delivery)",
    )
    sub.add_argument(
        "--url", help=f"the running gateway (default: $ROLECALL_URL, else {DEFAULT_URL})"
    )
    sub.set_defaults(command=hook_test_command)


def hook_test_command(args: argparse.Namespace) -> int:
    from channels.webhooks.signatures import BadSecret, signed_headers
    from channels.webhooks.sources import configured_sources
    from core.model.roles import ManifestError
    from core.model.webhooks import SourceKind

    base_url = gateway_url(args.url)
    settings = read_settings()
    try:
        sources = configured_sources(
            settings.sources_dir, default="sources_dir" not in settings.model_fields_set
        )
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    source = sources.get(args.source)
    if source is None:
        known = ", ".join(sorted(sources)) or "none"
        raise Failure(
            f"no webhook source named {args.source!r} in {settings.sources_dir} "
            f"(sources there: {known})",
            EXIT_USAGE,
        )
    secret = os.environ.get(source.secret, "").strip()
    if not secret:
        raise Failure(f"the setting {source.secret} (the source's secret) is not set", EXIT_USAGE)
    body = _read(args.file)
    event = args.event
    if source.kind is SourceKind.GITHUB and event is None:
        event = github_event(json.loads(body))
    try:
        headers = signed_headers(
            source.kind,
            secret,
            body,
            delivery_id=args.delivery_id or f"rolecall-test-{uuid.uuid4()}",
            at=datetime.now(UTC),
            event=event,
        )
    except BadSecret as exc:
        raise Failure(f"the setting {source.secret}: {exc}", EXIT_USAGE) from None
    status, text = send(base_url, source.name, body, headers)
    line = f"{status} {answer_line(text)}"
    if not 200 <= status < 300:
        raise Failure(line)
    print(line)
    return 0


def _read(file: str) -> bytes:
    try:
        body = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise Failure(f"cannot read {file}: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Failure(f"{file} is not JSON: {exc}", EXIT_USAGE) from None
    return body


def github_event(payload: object) -> str:
    """The GitHub event a sample payload is, when `--event` does not say."""
    if isinstance(payload, dict) and "issue" in payload:
        return "issue_comment" if "comment" in payload else "issues"
    return "ping"


def send(base_url: str, source: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, str]:
    """POST the delivery: the status and the answer's text, whatever the status."""
    url = f"{base_url}/hooks/{urllib.parse.quote(source, safe='')}"
    sent = {"Content-Type": "application/json", **headers}
    request = urllib.request.Request(url, data=body, method="POST", headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode("utf-8", "replace")
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ConnectionRefusedError):
            raise Failure(
                f"no gateway answers at {base_url} — start it with `rolecall serve`"
            ) from None
        raise Failure(f"cannot reach the gateway at {base_url}: {exc.reason}") from None
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        raise Failure(f"cannot reach the gateway at {base_url}: {exc}") from None


def answer_line(text: str) -> str:
    """The answer on one line (JSON compacted; anything else with its line breaks dropped)."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return " ".join(text.split())
