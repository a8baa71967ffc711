"""`rolecall replica …`: the replicas serving a running gateway's database (docs/scale.md).

    rolecall replica list [--stopped]

One line a replica: its id (`*` marks the one that answered), whether it is live, the runs it
owns, its last heartbeat and its address. Like every command that talks to the gateway, it
takes `--json`, `--url` and `--token`, and fails with one line (`gateway.cli.main`).
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from gateway.cli._shared import command_group, gateway_client, gateway_command, output, table
from gateway.cli.client import JSON


def add_commands(commands: Any) -> None:
    replica = command_group(
        commands,
        "replica",
        "the replicas serving a running gateway's database",
        "Read the `rolecall serve` processes that share the gateway's database (docs/scale.md).",
    )
    add = partial(gateway_command, replica)
    sub = add("list", replica_list_command, "list the replicas, their heartbeats and runs owned")
    sub.add_argument(
        "--stopped", action="store_true", help="list the replicas that stopped cleanly too"
    )


def replica_list_command(args: argparse.Namespace) -> int:
    query = {"stopped": "true"} if args.stopped else None
    answer = gateway_client(args).request("GET", "/replicas", query=query).data
    return output(args, answer, _print_replicas)


def _print_replicas(answer: JSON) -> None:
    replicas = answer.get("replicas") or []
    if not replicas:
        print("(no replicas)")
        return
    rows = [["ID", "STATE", "RUNS", "LAST HEARTBEAT", "ADDRESS"]]
    for r in replicas:
        state = "stopped" if r.get("stopped") else ("live" if r.get("live") else "silent")
        mark = "*" if r.get("this") else " "
        rows.append(
            [
                f"{mark}{r.get('id')}",
                state,
                str(r.get("runs_owned")),
                str(r.get("last_heartbeat")),
                str(r.get("address") or "-"),
            ]
        )
    print(table(rows))
