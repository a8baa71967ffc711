"""`rolecall audit`: the audit trail of operator actions on a running gateway (docs/audit.md).

    rolecall audit [--actor NAME] [--action ACTION] [--limit N] [--after POS | --before POS]

One line a record, oldest first: its position, when, which operator token acted (`actor`), from
where, the action and what it changed. By default the newest `--limit` records (50); `--before`
pages back from a position (the line after the table says where the earlier page begins),
`--after` reads forward from one (to follow the trail: keep the last position and ask again).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gateway.cli._shared import count, gateway_client, gateway_command, one_line, output, table
from gateway.cli.client import JSON

DETAIL_WIDTH = 100


def add_commands(commands: Any) -> None:
    sub = gateway_command(
        commands, "audit", audit_command, "the audit trail: who did what, when, from where"
    )
    sub.add_argument("--actor", metavar="NAME", help="only what this operator token did")
    sub.add_argument("--action", metavar="ACTION", help="only this action (e.g. token.revoke)")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N records (1-500; 50)")
    where = sub.add_mutually_exclusive_group()
    where.add_argument("--after", type=count(0), metavar="POS", help="read forward from here")
    where.add_argument("--before", type=count(1), metavar="POS", help="the page before this")


def audit_command(args: argparse.Namespace) -> int:
    query: dict[str, object] = {
        "actor": args.actor,
        "action": args.action,
        "limit": args.limit,
        "after": args.after,
        "before": args.before,
    }
    if args.after is None and args.before is None:
        query["latest"] = "true"
    page = gateway_client(args).request("GET", "/audit", query=query).data
    return output(args, page, lambda p: _print_page(p, forward=args.after is not None))


def _print_page(page: JSON, *, forward: bool) -> None:
    records = page.get("records") or []
    if not records:
        print("(no audit records)")
    else:
        rows = [["POSITION", "AT", "ACTOR", "CLIENT", "ACTION", "DETAIL"]]
        rows += [
            [
                str(r.get("position")),
                str(r.get("at")),
                str(r.get("actor")),
                str(r.get("client") or "-"),
                str(r.get("action")),
                _detail(r.get("detail") or {}),
            ]
            for r in records
        ]
        print(table(rows))
    if page.get("more") and page.get("next") is not None:
        print(f"(more: --{'after' if forward else 'before'} {page['next']})")


def _detail(detail: JSON) -> str:
    text = one_line(json.dumps(detail, ensure_ascii=False, separators=(",", ":")))
    return text if len(text) <= DETAIL_WIDTH else text[: DETAIL_WIDTH - 1] + "…"
