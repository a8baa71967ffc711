"""`rolecall approval …`: what agents ask the people of their conversations, on a running gateway.

    rolecall approval list THREAD [--all] [--as ADDR]
    rolecall approval show ID
    rolecall approval answer ID OPTION --as person:<slug>

`list` shows a thread's pending approvals (with `--all`, the resolved ones too), oldest first; with
`--as`, only those that participant may see. `answer` answers as that person, from the `api`
channel: the first valid answer, from any channel, resolves the approval, and a later one fails
with one line saying who answered what (`approval_closed`). The gateway checks the rest — a person
who may not answer, an option not offered — each one line and exit 1 (`gateway.cli.main`).
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
from functools import partial
from typing import Any

from gateway.cli._shared import (
    command_group,
    gateway_client,
    gateway_command,
    one_line,
    output,
    print_json,
    table,
)
from gateway.cli.client import JSON

APPROVAL_ID_HELP = "the approval's id (from `rolecall approval list`)"
ARGUMENTS_WIDTH = 60


def add_commands(commands: Any) -> None:
    approval = command_group(
        commands,
        "approval",
        "list, read and answer what agents ask before they act",
        "Read and answer approvals (what a role's run asks the people of its conversation "
        "before it acts) through a running gateway's HTTP API (docs/api.md).",
    )

    add = partial(gateway_command, approval)

    sub = add("list", approval_list_command, "a thread's pending approvals, oldest first")
    sub.add_argument("thread_id", metavar="THREAD", help="the thread's id")
    sub.add_argument("--all", action="store_true", help="the resolved approvals too")
    sub.add_argument(
        "--as", dest="viewer", metavar="ADDR", help="only those this participant may see"
    )

    sub = add("show", approval_show_command, "an approval: what was asked, and the answer")
    sub.add_argument("approval_id", metavar="ID", help=APPROVAL_ID_HELP)

    sub = add("answer", approval_answer_command, "answer an approval as a person")
    sub.add_argument("approval_id", metavar="ID", help=APPROVAL_ID_HELP)
    sub.add_argument("option", metavar="OPTION", help="the id of the option chosen")
    sub.add_argument(
        "--as",
        dest="answerer",
        required=True,
        metavar="ADDR",
        help="the person answering (person:<slug>)",
    )


def _path(approval_id: str) -> str:
    return "/approvals/" + urllib.parse.quote(approval_id, safe="")


# -- the commands ----------------------------------------------------------------------------------


def approval_list_command(args: argparse.Namespace) -> int:
    path = "/threads/" + urllib.parse.quote(args.thread_id, safe="") + "/approvals"
    query = {"state": "all" if args.all else None, "as": args.viewer}
    answer = gateway_client(args).request("GET", path, query=query).data
    if args.json:
        print_json(answer)
        return 0
    approvals = answer.get("approvals") or []
    if not approvals:
        print("(no approvals)" if args.all else "(no pending approvals)")
        return 0
    rows = [
        [
            str(a.get("id", "")),
            str(a.get("state", "")),
            str(a.get("expires_at", "")),
            "/".join(str(o.get("id")) for o in a.get("options") or []),
            _answer(a.get("resolution")),
            one_line(str(a.get("title", ""))),
        ]
        for a in approvals
    ]
    print(table([["APPROVAL", "STATE", "EXPIRES_AT", "OPTIONS", "ANSWER", "TITLE"], *rows]))
    return 0


def approval_show_command(args: argparse.Namespace) -> int:
    approval = gateway_client(args).request("GET", _path(args.approval_id)).data
    return output(args, approval, _print_approval)


def approval_answer_command(args: argparse.Namespace) -> int:
    body = {"option": args.option, "as": args.answerer}
    approval = gateway_client(args).request("POST", _path(args.approval_id), body=body).data
    return output(args, approval, _print_approval)


# -- output ----------------------------------------------------------------------------------------


def _answer(resolution: JSON | None) -> str:
    """Who chose what, on one line; `-` while pending or when nobody answered."""
    option = (resolution or {}).get("option")
    if not resolution or not option:
        return "-"
    return f"{option.get('id')} by {resolution.get('by')}"


def _print_approval(approval: JSON) -> None:
    tool = approval.get("tool")
    resolution = approval.get("resolution") or {}
    fields = [
        ["approval", str(approval.get("id", ""))],
        ["thread", str(approval.get("thread_id", ""))],
        ["role", str(approval.get("role", ""))],
        ["run", str(approval.get("run_id", ""))],
        ["title", one_line(str(approval.get("title", "")))],
        ["tool", _tool(tool) if tool else "-"],
        ["options", "; ".join(_option(o) for o in approval.get("options") or [])],
        ["approvers", ", ".join(approval.get("approvers") or []) or "the active people"],
        ["requested_at", str(approval.get("requested_at", ""))],
        ["expires_at", str(approval.get("expires_at", ""))],
        ["state", str(approval.get("state", ""))],
    ]
    if resolution:
        fields.append(["resolved_at", str(resolution.get("at", ""))])
    if resolution.get("option"):
        fields.append(["answer", _option(resolution["option"])])
        fields.append(["by", f"{resolution.get('by')} ({resolution.get('channel') or '-'})"])
    print(table(fields))
    if approval.get("description"):
        print()
        print(str(approval["description"]))


def _option(option: JSON) -> str:
    return f"{option.get('id')}: {option.get('label')} ({option.get('kind')})"


def _tool(tool: JSON) -> str:
    arguments = json.dumps(tool.get("arguments"), ensure_ascii=False)
    if len(arguments) > ARGUMENTS_WIDTH:
        arguments = arguments[: ARGUMENTS_WIDTH - 1] + "…"
    return f"{tool.get('name')} {arguments}"
