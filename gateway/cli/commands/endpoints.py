"""`rolecall endpoint …`: the outbound webhook endpoints of a running gateway.

    rolecall endpoint add URL [--kind K]… [--role R]… [--thread ID]… [--from P] [--from-task P]
    rolecall endpoint list
    rolecall endpoint show ID
    rolecall endpoint deliveries ID [--failed] [--before SEQ] [--limit N]
    rolecall endpoint replay ID [--from POSITION] [--from-task POSITION]
    rolecall endpoint remove ID

`add` prints the endpoint's id and its signing secret, which the gateway shows only then. Like
every command that talks to the gateway, each takes `--json`, `--url` and `--token`, and fails
with one line (`gateway.cli.main`).
"""

from __future__ import annotations

import argparse
import urllib.parse
from functools import partial
from typing import Any

from core.model.endpoints import KINDS
from gateway.cli._shared import (
    command_group,
    count,
    gateway_client,
    gateway_command,
    one_line,
    output,
    print_json,
    table,
)
from gateway.cli.client import JSON


def add_commands(commands: Any) -> None:
    endpoint = command_group(
        commands,
        "endpoint",
        "outbound webhook endpoints of a running gateway",
        "Register, read and replay the endpoints a running gateway delivers its "
        "events to as Standard Webhooks (docs/webhooks.md).",
    )

    add = partial(gateway_command, endpoint)

    sub = add("add", endpoint_add_command, "register an endpoint; prints its secret (shown once)")
    sub.add_argument(
        "endpoint_url",
        metavar="URL",
        help="the receiver: where to deliver (http:// or https://; --url is the gateway)",
    )
    sub.add_argument(
        "--kind",
        dest="kinds",
        action="append",
        choices=KINDS,
        metavar="KIND",
        help=f"an event kind to deliver ({', '.join(KINDS)}); repeatable; default: all",
    )
    sub.add_argument(
        "--role",
        dest="roles",
        action="append",
        metavar="ROLE",
        help="only conversations with this role; repeatable",
    )
    sub.add_argument(
        "--thread",
        dest="threads",
        action="append",
        metavar="ID",
        help="only this thread; repeatable",
    )
    _positions(sub, "start at this timeline position (inclusive; default: what comes next)")

    add("list", endpoint_list_command, "every endpoint, oldest first")

    sub = add(
        "show",
        endpoint_show_command,
        "an endpoint: status, reason, failures, cursors, what is pending, its last failure",
    )
    sub.add_argument(
        "endpoint_id", metavar="ID", help="the endpoint's id (from `rolecall endpoint list`)"
    )

    sub = add("deliveries", endpoint_deliveries_command, "its delivery log, newest attempt first")
    sub.add_argument(
        "endpoint_id", metavar="ID", help="the endpoint's id (from `rolecall endpoint list`)"
    )
    sub.add_argument("--failed", action="store_true", help="only the attempts that failed")
    sub.add_argument("--before", type=count(1), metavar="SEQ", help="the page before this attempt")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N attempts (1-500; 50)")

    sub = add(
        "replay",
        endpoint_replay_command,
        "deliver again from a position; makes a parked or disabled endpoint active again",
    )
    sub.add_argument(
        "endpoint_id", metavar="ID", help="the endpoint's id (from `rolecall endpoint list`)"
    )
    _positions(sub, "deliver again from this timeline position (inclusive)")

    sub = add("remove", endpoint_remove_command, "delete an endpoint; its deliveries stop")
    sub.add_argument(
        "endpoint_id", metavar="ID", help="the endpoint's id (from `rolecall endpoint list`)"
    )


def _positions(sub: argparse.ArgumentParser, timeline_help: str) -> None:
    sub.add_argument(
        "--from", dest="from_position", type=count(0), metavar="POSITION", help=timeline_help
    )
    sub.add_argument(
        "--from-task",
        dest="from_task_position",
        type=count(0),
        metavar="POSITION",
        help="the same for the task-event stream",
    )


def _path(endpoint_id: str) -> str:
    return "/endpoints/" + urllib.parse.quote(endpoint_id, safe="")


def endpoint_add_command(args: argparse.Namespace) -> int:
    body: JSON = {
        "url": args.endpoint_url,
        "kinds": args.kinds,
        "roles": args.roles,
        "threads": args.threads,
        "from_position": args.from_position,
        "from_task_position": args.from_task_position,
    }
    made = gateway_client(args).request("POST", "/endpoints", body=body).data
    if args.json:
        print_json(made)
        return 0
    print(table([["endpoint", str(made.get("id"))], ["secret", str(made.get("secret"))]]))
    print("(the secret is shown only now: the receiver verifies signatures with it)")
    return 0


def endpoint_list_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).request("GET", "/endpoints").data
    if args.json:
        print_json(answer)
        return 0
    endpoints = answer.get("endpoints") or []
    if not endpoints:
        print("(no endpoints)")
        return 0
    rows = [
        [
            str(e.get("id")),
            _status(e),
            f"{e.get('position')}/{e.get('task_position')}",
            ",".join(e.get("kinds") or []),
            str(e.get("url")),
        ]
        for e in endpoints
    ]
    print(table([["ENDPOINT", "STATUS", "CURSORS", "KINDS", "URL"], *rows]))
    return 0


def endpoint_show_command(args: argparse.Namespace) -> int:
    endpoint = gateway_client(args).request("GET", _path(args.endpoint_id)).data
    return output(args, endpoint, _print_endpoint)


def endpoint_deliveries_command(args: argparse.Namespace) -> int:
    query = {
        "failed": "true" if args.failed else None,
        "before": args.before,
        "limit": args.limit,
    }
    asked = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
    path = _path(args.endpoint_id) + "/deliveries" + (f"?{asked}" if asked else "")
    page = gateway_client(args).request("GET", path).data
    if args.json:
        print_json(page)
        return 0
    deliveries = page.get("deliveries") or []
    if not deliveries:
        print("(no failed deliveries)" if args.failed else "(no deliveries)")
    else:
        rows = [
            [
                str(d.get("seq")),
                str(d.get("at")),
                str(d.get("type")),
                str(d.get("position")),
                one_line(str(d.get("outcome"))),
            ]
            for d in deliveries
        ]
        print(table([["SEQ", "AT", "TYPE", "POSITION", "OUTCOME"], *rows]))
    if page.get("next") is not None:
        print(f"(more: --before {page['next']})")
    return 0


def endpoint_replay_command(args: argparse.Namespace) -> int:
    body = {"from_position": args.from_position, "from_task_position": args.from_task_position}
    endpoint = (
        gateway_client(args).request("POST", _path(args.endpoint_id) + "/replay", body=body).data
    )
    return output(args, endpoint, lambda e: _print_endpoint(e, note="replaying"))


def endpoint_remove_command(args: argparse.Namespace) -> int:
    gone = gateway_client(args).request("DELETE", _path(args.endpoint_id)).data
    return output(args, gone, lambda e: print(f"removed endpoint {e.get('id')} ({e.get('url')})"))


def _status(endpoint: JSON) -> str:
    status = str(endpoint.get("status", "?"))
    failures = endpoint.get("failures") or 0
    return f"{status} ({failures} failures)" if failures else status


def _print_endpoint(endpoint: JSON, *, note: str | None = None) -> None:
    def listed(name: str) -> str:
        return ", ".join(endpoint.get(name) or []) or "(all)"

    fields = [
        ["endpoint", str(endpoint.get("id")) + (f"  ({note})" if note else "")],
        ["url", str(endpoint.get("url"))],
        ["status", _status(endpoint)],
        ["reason", one_line(str(endpoint["reason"])) if endpoint.get("reason") else "-"],
        ["kinds", listed("kinds")],
        ["roles", listed("roles")],
        ["threads", listed("threads")],
        ["position", str(endpoint.get("position"))],
        ["task_position", str(endpoint.get("task_position"))],
        ["next_attempt_at", str(endpoint.get("next_attempt_at") or "-")],
        *_backlog(endpoint),
        ["created_at", str(endpoint.get("created_at"))],
        ["updated_at", str(endpoint.get("updated_at"))],
    ]
    print(table(fields))


def _backlog(endpoint: JSON) -> list[list[str]]:
    """What `show` adds to an endpoint: the events waiting for it and its last failed attempt."""
    if "pending" not in endpoint:  # a replay answers the endpoint alone
        return []
    pending = endpoint.get("pending") or {}
    waiting = f"{pending.get('events', 0)} events, {pending.get('task_events', 0)} task events"
    failure = endpoint.get("last_failure")
    last = (
        f"{failure.get('at')}  {failure.get('type')} at {failure.get('position')}: "
        + one_line(str(failure.get("outcome")))
        if failure
        else "-"
    )
    return [["pending", waiting], ["last_failure", last]]
