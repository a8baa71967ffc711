"""`rolecall task …`: tasks (tracked work items) on a running gateway.

    rolecall task list [--status S] [--assignee ROLE] [--after ID] [--limit N]
    rolecall task show ID
    rolecall task create TITLE… --as ADDR [--body TEXT] [--assignee ROLE] [--external SOURCE:KEY
                                [--external-url URL]]
    rolecall task update ID --as ADDR [--title TEXT] [--body TEXT] [--status S]
                                [--assignee ROLE | --unassign]
    rolecall task comment ID --as ADDR TEXT…

Every change is recorded as made by the person `--as` names (`person:<slug>`). A body or a
comment given as `-` is read from stdin. The gateway checks the rest: a status move its rules
refuse, an assignee it does not serve, a task it does not have — each one line and exit 1.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from gateway.cli._shared import (
    EXIT_USAGE,
    Failure,
    command_group,
    count,
    gateway_client,
    gateway_command,
    one_line,
    output,
    print_json,
    read_text,
    table,
)
from gateway.cli.client import JSON

TASK_ID_HELP = "the task's id (from `rolecall task list`)"
STATUSES = "open, in_progress, done or cancelled"
AS_HELP = "the person the change is recorded as made by (person:<slug>)"


def add_commands(commands: Any) -> None:
    task = command_group(
        commands,
        "task",
        "list, read, create and change tasks on a running gateway",
        "Work with tasks (tracked work items) through a running gateway's HTTP API.",
    )

    add = partial(gateway_command, task)

    sub = add("list", task_list_command, "tasks, oldest first")
    sub.add_argument("--status", metavar="S", help=f"only tasks with this status ({STATUSES})")
    sub.add_argument("--assignee", metavar="ROLE", help="only tasks assigned to this role")
    sub.add_argument("--after", metavar="ID", help="start after this task (from a previous page)")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N tasks (1-500; 50)")

    sub = add("show", task_show_command, "a task and its history")
    sub.add_argument("task_id", metavar="ID", help=TASK_ID_HELP)

    sub = add("create", task_create_command, "create a task")
    sub.add_argument("title", nargs="+", metavar="TITLE", help="the task's title")
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help=AS_HELP)
    sub.add_argument("--body", metavar="TEXT", help="what the task is about ('-' reads stdin)")
    sub.add_argument("--assignee", metavar="ROLE", help="the role it is assigned to")
    sub.add_argument(
        "--external",
        metavar="SOURCE:KEY",
        help="the item it follows in another system (github:owner/repo#12)",
    )
    sub.add_argument("--external-url", metavar="URL", help="with --external: the item's page")

    sub = add("update", task_update_command, "change a task's title, body, status or assignee")
    sub.add_argument("task_id", metavar="ID", help=TASK_ID_HELP)
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help=AS_HELP)
    sub.add_argument("--title", metavar="TEXT", help="the new title")
    sub.add_argument("--body", metavar="TEXT", help="the new body ('-' reads stdin)")
    sub.add_argument("--status", metavar="S", help=f"the new status ({STATUSES})")
    assignee = sub.add_mutually_exclusive_group()
    assignee.add_argument("--assignee", metavar="ROLE", help="assign it to this role")
    assignee.add_argument("--unassign", action="store_true", help="assign it to no role")

    sub = add("comment", task_comment_command, "comment on a task")
    sub.add_argument("task_id", metavar="ID", help=TASK_ID_HELP)
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help=AS_HELP)
    sub.add_argument("text", nargs="+", metavar="TEXT", help="the comment ('-' reads stdin)")


# -- the commands ----------------------------------------------------------------------------------


def task_list_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).list_tasks(
        status=args.status, assignee=args.assignee, after=args.after, limit=args.limit
    )
    if args.json:
        print_json(answer)
        return 0
    tasks = answer.get("tasks", [])
    if tasks:
        rows = [
            [
                str(t.get("id", "")),
                str(t.get("status", "")),
                t.get("assignee") or "-",
                str(t.get("updated_at", "")),
                one_line(str(t.get("title", ""))),
            ]
            for t in tasks
        ]
        print(table([["TASK", "STATUS", "ASSIGNEE", "UPDATED_AT", "TITLE"], *rows]))
    else:
        print("(no tasks)")
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def task_show_command(args: argparse.Namespace) -> int:
    return output(args, gateway_client(args).get_task(args.task_id), _print_task)


def task_create_command(args: argparse.Namespace) -> int:
    if args.external_url is not None and args.external is None:
        raise Failure("--external-url goes with --external SOURCE:KEY", EXIT_USAGE)
    fields: JSON = {"author": args.author, "title": " ".join(args.title)}
    if args.body is not None:
        fields["body"] = read_text([args.body])
    if args.assignee is not None:
        fields["assignee"] = args.assignee
    if args.external is not None:
        fields["external"] = _external(args.external, args.external_url)
    created = gateway_client(args).create_task(fields)
    return output(args, created, lambda t: _print_task(t, note="created"))


def task_update_command(args: argparse.Namespace) -> int:
    change: JSON = {}
    if args.title is not None:
        change["title"] = args.title
    if args.body is not None:
        change["body"] = read_text([args.body])
    if args.status is not None:
        change["status"] = args.status
    if args.assignee is not None or args.unassign:
        change["assignee"] = args.assignee
    if not change:
        raise Failure(
            "nothing to change: give --title, --body, --status, --assignee or --unassign",
            EXIT_USAGE,
        )
    updated = gateway_client(args).update_task(args.task_id, {"author": args.author, **change})
    event = updated.get("event")
    note = "updated: " + ", ".join(sorted(event["changes"])) if event else "nothing changed"
    return output(args, updated, lambda t: _print_task(t, note=note))


def task_comment_command(args: argparse.Namespace) -> int:
    event = gateway_client(args).comment_on_task(args.task_id, args.author, read_text(args.text))
    return output(args, event, lambda e: _print_history([e]))


def _external(key: str, url: str | None) -> JSON:
    source, colon, item = key.partition(":")
    if not colon or not source or not item:
        raise Failure(
            f'--external is "<source>:<key>", like "github:owner/repo#12" (got {key!r})',
            EXIT_USAGE,
        )
    external: JSON = {"source": source, "key": item}
    if url is not None:
        external["url"] = url
    return external


# -- output ----------------------------------------------------------------------------------------


def _print_task(task: JSON, *, note: str | None = None) -> None:
    external = task.get("external") or None
    fields = [
        ["task", str(task.get("id", "")) + (f"  ({note})" if note else "")],
        ["title", one_line(str(task.get("title", "")))],
        ["status", str(task.get("status", ""))],
        ["assignee", task.get("assignee") or "-"],
        ["external", _external_text(external) if external else "-"],
        ["created_at", str(task.get("created_at", ""))],
        ["updated_at", str(task.get("updated_at", ""))],
    ]
    print(table(fields))
    if task.get("body"):
        print()
        print(str(task["body"]))
    history = task.get("history")
    if history:
        print()
        _print_history(history)


def _external_text(external: JSON) -> str:
    text = f"{external.get('source')}:{external.get('key')}"
    return f"{text}  {external['url']}" if external.get("url") else text


def _print_history(events: list[JSON]) -> None:
    rows = [
        [
            str(e.get("seq", "")),
            str(e.get("at", "")),
            str(e.get("kind", "")),
            _actor(e.get("actor") or {}),
            _what(e),
        ]
        for e in events
    ]
    print(table([["SEQ", "AT", "KIND", "WHO", "WHAT"], *rows]))


def _actor(actor: JSON) -> str:
    name = str(actor.get("name", "?"))
    return f"{name} (run {actor['run_id']})" if actor.get("run_id") else name


def _what(event: JSON) -> str:
    """What one task event did, on one line."""
    kind = event.get("kind")
    changes = event.get("changes") or {}
    if kind == "commented":
        return one_line(str(event.get("text", "")))
    if kind == "created":
        return one_line(str(changes.get("title", "")))
    moves = [
        f"{name}: {_value(change.get('from'))} -> {_value(change.get('to'))}"
        for name, change in changes.items()
        if isinstance(change, dict)
    ]
    return "; ".join(moves) or "-"


def _value(value: object) -> str:
    if value is None:
        return "-"
    text = one_line(str(value))
    return text if len(text) <= 40 else text[:39] + "…"
