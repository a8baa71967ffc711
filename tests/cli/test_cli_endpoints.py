"""`rolecall endpoint …` against a running gateway: register an endpoint (its secret printed
once) that a receiver on loopback gets signed events at, show and list it (what is pending, its
last failure), read its delivery log a page at a time, replay it after it was parked, remove it;
and one clear line for each failure.

One gateway serves the module, allowed to deliver to loopback, parking an endpoint after two
failures in a row, with a short backoff.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from standardwebhooks import Webhook

from tests.cli.conftest import Cli


@pytest.fixture(scope="module")
def gateway_settings() -> dict[str, str]:
    return {
        "ROLECALL_ENDPOINTS_ALLOW_PRIVATE": "true",
        "ROLECALL_ENDPOINTS_BACKOFF_BASE": "0.05",
        "ROLECALL_ENDPOINTS_BACKOFF_CAP": "0.1",
        "ROLECALL_ENDPOINTS_PARK_AFTER": "2",
    }


class Receiver(ThreadingHTTPServer):
    """Answers `status` to every POST and keeps (headers, body, status) of each."""

    status = 200

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.got: list[tuple[dict[str, str], str, int]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        status = self.server.status
        self.server.got.append((dict(self.headers), body, status))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def fields(table: str) -> dict[str, str]:
    return dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in table.splitlines())


def until(check: Callable[[], Any], within: float = 15.0) -> Any:
    deadline = time.monotonic() + within
    while not (got := check()):
        assert time.monotonic() < deadline, "it did not happen in time"
        time.sleep(0.05)
    return got


def test_add_deliver_show_replay_and_remove(cli: Cli, receiver: Receiver) -> None:
    added = cli("endpoint", "add", receiver.url, "--kind", "message")
    assert added.returncode == 0, added.stderr
    about = fields(added.stdout.splitlines()[0] + "\n" + added.stdout.splitlines()[1])
    endpoint_id, secret = about["endpoint"], about["secret"]
    assert secret.startswith("whsec_") and "shown only now" in added.stdout

    thread = cli("thread", "resolve", "person:ann", "person:bo", "--json").json()
    said = cli("thread", "send", thread["id"], "--as", "person:ann", "hello", "--json").json()
    headers, body, _ = until(lambda: receiver.got)[0]
    payload = Webhook(secret).verify(body, headers)
    assert payload["type"] == "timeline.message" and payload["data"]["id"] == said["id"]
    assert headers["webhook-id"] == said["id"]

    shown = cli("endpoint", "show", endpoint_id)
    assert shown.returncode == 0, shown.stderr
    about = fields(shown.stdout)
    assert (about["url"], about["status"], about["kinds"]) == (receiver.url, "active", "message")
    assert (about["roles"], about["reason"]) == ("(all)", "-")
    until(lambda: cli("endpoint", "show", endpoint_id, "--json").json()["position"] > 0)

    receiver.status = 500
    down = cli("thread", "send", thread["id"], "--as", "person:ann", "are you down?", "--json")
    parked = until(
        lambda: (
            (e := cli("endpoint", "show", endpoint_id, "--json").json())["status"] == "parked" and e
        )
    )
    assert parked["reason"] == "parked after 2 failed attempts in a row; the last: HTTP 500"
    stuck = down.json()["position"]
    about = fields(cli("endpoint", "show", endpoint_id).stdout)
    assert about["pending"] == "1 events, 0 task events"
    assert about["last_failure"].endswith(f"timeline.message at {stuck}: HTTP 500")

    log = cli("endpoint", "deliveries", endpoint_id)
    assert log.returncode == 0, log.stderr
    lines = log.stdout.splitlines()
    assert lines[0].split() == ["SEQ", "AT", "TYPE", "POSITION", "OUTCOME"]
    outcomes = [line.split()[-2:] for line in lines[1:]]
    assert outcomes == [["HTTP", "500"], ["HTTP", "500"], ["HTTP", "200"]]  # newest first
    failed = cli("endpoint", "deliveries", endpoint_id, "--failed", "--limit", "1").stdout
    assert len(failed.splitlines()) == 3 and failed.splitlines()[-1].startswith("(more: --before ")
    before = failed.splitlines()[-1].split()[-1].rstrip(")")
    rest = cli("endpoint", "deliveries", endpoint_id, "--failed", "--before", before).stdout
    assert len(rest.splitlines()) == 2 and rest.splitlines()[1].endswith("HTTP 500")
    listed = cli("endpoint", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:5] == ["ENDPOINT", "STATUS", "CURSORS", "KINDS", "URL"]
    assert f"{endpoint_id}  parked (2 failures)" in listed.stdout

    receiver.status = 200
    replayed = cli("endpoint", "replay", endpoint_id, "--from", str(said["position"]))
    assert replayed.returncode == 0, replayed.stderr
    assert fields(replayed.stdout)["endpoint"] == f"{endpoint_id}  (replaying)"
    assert fields(replayed.stdout)["status"] == "active"
    until(lambda: len([g for g in receiver.got if g[2] == 200]) >= 3)
    accepted = [json.loads(b)["data"]["text"] for _, b, s in receiver.got if s == 200]
    assert accepted == ["hello", "hello", "are you down?"]  # replayed from "hello"

    removed = cli("endpoint", "remove", endpoint_id)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"removed endpoint {endpoint_id} ({receiver.url})\n"
    assert cli("endpoint", "list", "--json").json()["endpoints"] == []


def test_failures_are_one_line(cli: Cli) -> None:
    refused = cli("endpoint", "add", "ftp://example.com/")
    assert refused.error_line.startswith("rolecall: invalid_url: url: url must be")
    unknown = cli("endpoint", "show", "nope")
    assert unknown.error_line == "rolecall: endpoint_not_found: no endpoint with id 'nope'"
    beyond = cli("endpoint", "replay", "nope", "--from", "1")
    assert beyond.error_line.startswith("rolecall: endpoint_not_found")
    usage = cli("endpoint", "add", "http://127.0.0.1:9/", "--kind", "messages")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
