"""`rolecall memory …`: a role's agent memory on a running gateway, for operators.

    rolecall memory list ROLE [--thread ID] [--after ENTRY_ID] [--limit N]
    rolecall memory redact ROLE ENTRY_ID [--reason TEXT]

`list` shows every entry of the role, oldest first, redacted ones marked, so that an operator can
find the one to redact; `redact` records the redaction, after which no recall returns the entry
(redacting it again fails: the first redaction stands). Like every command that talks to the
gateway, each takes `--json`, `--url` and `--token`, and fails with one line (`gateway.cli.main`).
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
from typing import Any

from gateway.cli._shared import (
    Command,
    command_group,
    count,
    gateway_client,
    gateway_command,
    output,
    print_json,
    table,
)
from gateway.cli.client import JSON

PAYLOAD_WIDTH = 60


def add_commands(commands: Any) -> None:
    memory = command_group(
        commands,
        "memory",
        "a role's agent memory on a running gateway: list entries, redact one",
        "Read a role's agent memory and redact entries through a running gateway's "
        "HTTP API (docs/api.md).",
    )

    def add(name: str, command: Command, help_text: str) -> argparse.ArgumentParser:
        sub = gateway_command(memory, name, command, help_text)
        sub.add_argument("role", metavar="ROLE", help="the role (NAME or role:NAME)")
        return sub

    sub = add("list", memory_list_command, "every entry of a role, oldest first, redacted marked")
    sub.add_argument("--thread", dest="thread_id", metavar="ID", help="only entries of this thread")
    sub.add_argument("--after", metavar="ENTRY_ID", help="start after this entry")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N entries (1-500; 50)")

    sub = add("redact", memory_redact_command, "redact an entry: no recall returns it again")
    sub.add_argument(
        "entry_id", metavar="ENTRY_ID", help="the entry's id (from `rolecall memory list`)"
    )
    sub.add_argument("--reason", help="why (kept with the redaction)")


def _path(role: str) -> str:
    return "/roles/" + urllib.parse.quote(role.removeprefix("role:"), safe="") + "/memory"


def memory_list_command(args: argparse.Namespace) -> int:
    query = {"thread": args.thread_id, "after": args.after, "limit": args.limit}
    answer = gateway_client(args).request("GET", _path(args.role), query=query).data
    if args.json:
        print_json(answer)
        return 0
    entries = answer.get("entries") or []
    if entries:
        rows = [
            [
                str(e.get("id")),
                str(e.get("at")),
                str(e.get("thread_id") or "-"),
                _state(e),
                _payload(e),
            ]
            for e in entries
        ]
        print(table([["ENTRY", "AT", "THREAD", "STATE", "PAYLOAD"], *rows]))
    else:
        print(f"(no memory for role:{args.role.removeprefix('role:')})")
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def memory_redact_command(args: argparse.Namespace) -> int:
    path = _path(args.role) + "/" + urllib.parse.quote(args.entry_id, safe="") + "/redact"
    entry = gateway_client(args).request("POST", path, body={"reason": args.reason}).data
    return output(args, entry, _print_redacted)


def _state(entry: JSON) -> str:
    if entry.get("redacted"):
        state = "redacted"
    elif entry.get("thread_id") is None or not entry.get("thread_only"):
        state = "shared"
    else:
        state = "thread only"
    return state + (" (cleaned)" if entry.get("cleaned") else "")


def _payload(entry: JSON) -> str:
    text = json.dumps(entry.get("payload"), ensure_ascii=False)
    return text if len(text) <= PAYLOAD_WIDTH else text[: PAYLOAD_WIDTH - 1] + "…"


def _print_redacted(entry: JSON) -> None:
    redacted = entry.get("redacted") or {}
    print(
        table(
            [
                ["entry", f"{entry.get('id')}  (redacted)"],
                ["role", str(entry.get("role"))],
                ["thread", str(entry.get("thread_id") or "-")],
                ["redacted_at", str(redacted.get("at"))],
                ["by", str(redacted.get("by"))],
                ["reason", str(redacted.get("reason") or "-")],
            ]
        )
    )
