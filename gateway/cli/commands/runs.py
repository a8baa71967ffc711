"""`rolecall run …`: read and control the runs of roles (a role's work in a thread, or on a task)
on a running gateway.

    rolecall run list --thread ID | --task ID | --role NAME [--after ID] [--limit N]
    rolecall run show RUN_ID
    rolecall run turns RUN_ID [--after N] [--limit N]
    rolecall run cancel RUN_ID / fresh RUN_ID / token RUN_ID

A thread or a task has one run per role member, so only the runs of a role are paged; a role
the gateway neither serves nor has runs of is an error, naming the roles it serves. `NOW` is
what the run is doing in the gateway: `running` a turn, `awake` (its session is held), `asleep`
(its session was put to sleep and wakes with the next message) or `-` (its current session has
not been opened yet).
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
    table,
)
from gateway.cli.client import JSON, ClientError, GatewayClient

RUN_ID_HELP = "the run's id (from `rolecall run list`)"


def add_commands(commands: Any) -> None:
    run = command_group(
        commands,
        "run",
        "read and control the runs of roles on a running gateway",
        "Work with runs (a role's work in a thread) through a running gateway's HTTP API.",
    )

    add = partial(gateway_command, run)

    sub = add("list", run_list_command, "the runs of a thread, or of a role (oldest first)")
    which = sub.add_mutually_exclusive_group(required=True)
    which.add_argument("--thread", dest="thread_id", metavar="ID", help="the runs of this thread")
    which.add_argument("--task", dest="task_id", metavar="ID", help="the runs on this task")
    which.add_argument("--role", metavar="NAME", help="the runs of this role (NAME or role:NAME)")
    sub.add_argument("--after", metavar="ID", help="with --role: start after this run")
    sub.add_argument(
        "--limit", type=count(1), metavar="N", help="with --role: at most N runs (1-500; 50)"
    )

    sub = add("show", run_show_command, "a run: its cursor, status, session and turn count")
    sub.add_argument("run_id", metavar="RUN_ID", help=RUN_ID_HELP)

    sub = add("turns", run_turns_command, "a run's finished turns (its transcript), oldest first")
    sub.add_argument("run_id", metavar="RUN_ID", help=RUN_ID_HELP)
    sub.add_argument("--after", type=count(0), metavar="N", help="turns after turn number N")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N turns (1-500; 50)")

    sub = add("cancel", run_cancel_command, "stop the run's running turn at once")
    sub.add_argument("run_id", metavar="RUN_ID", help=RUN_ID_HELP)

    sub = add(
        "fresh",
        run_fresh_command,
        "start fresh: open the run's next session; earlier messages are archived",
    )
    sub.add_argument("run_id", metavar="RUN_ID", help=RUN_ID_HELP)

    sub = add("token", run_token_command, "mint a run token for the agent tools (shown once)")
    sub.add_argument("run_id", metavar="RUN_ID", help=RUN_ID_HELP)


# -- the commands ----------------------------------------------------------------------------------


def run_list_command(args: argparse.Namespace) -> int:
    if args.role is None and (args.after is not None or args.limit is not None):
        raise Failure(
            "--after and --limit page the runs of a role (--role); a thread or a task has one "
            "run per role",
            EXIT_USAGE,
        )
    role = args.role.removeprefix("role:") if args.role is not None else None
    client = gateway_client(args)
    answer = client.list_runs(
        thread_id=args.thread_id,
        task_id=args.task_id,
        role=role,
        after=args.after,
        limit=args.limit,
    )
    runs = answer.get("runs", [])
    if role is not None and not runs:
        _check_served(client, role)
    if args.json:
        print_json(answer)
        return 0
    if runs:
        _print_runs(runs)
    else:
        whose = (
            f"thread {args.thread_id}"
            if args.thread_id is not None
            else f"task {args.task_id}"
            if args.task_id is not None
            else f"role:{role}"
        )
        print(f"(no runs for {whose})")
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def _check_served(client: GatewayClient, role: str) -> None:
    """A role with no runs is one the gateway serves (no run yet), or a name it does not know:
    an error naming the roles it serves. (The runs of a role no longer served are listed.)"""
    try:
        client.get_role(role)
    except ClientError as exc:
        if exc.code != "role_not_found":
            raise
        served = [str(r.get("name")) for r in client.list_roles().get("roles", [])]
        serves = ", ".join(f"role:{name}" for name in served) if served else "no roles"
        raise Failure(
            f"unknown_role: this gateway serves no role {role!r} (it serves {serves})"
        ) from None


def run_show_command(args: argparse.Namespace) -> int:
    return output(args, gateway_client(args).get_run(args.run_id), _print_run)


def run_turns_command(args: argparse.Namespace) -> int:
    page = gateway_client(args).run_turns(args.run_id, after=args.after, limit=args.limit)
    if args.json:
        print_json(page)
        return 0
    turns = page.get("turns", [])
    if turns:
        _print_turns(turns)
    else:
        print("(no turns)")
    if page.get("more"):
        print(f"(more: --after {page['next']})")
    return 0


def run_cancel_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).cancel_turn(args.run_id)
    if args.json:
        print_json(answer)
        return 0
    print(f"cancelled the running turn of run {args.run_id}")
    run = answer.get("run")
    if isinstance(run, dict):
        _print_runs([run])
    return 0


def run_fresh_command(args: argparse.Namespace) -> int:
    run = gateway_client(args).start_fresh(args.run_id)
    number = (run.get("session") or {}).get("number")
    return output(args, run, lambda r: _print_run(r, note=f"started fresh: session {number}"))


def run_token_command(args: argparse.Namespace) -> int:
    minted = gateway_client(args).mint_run_token(args.run_id)
    return output(args, minted, lambda m: print(m["token"]))


# -- output ----------------------------------------------------------------------------------------


def _run_now(run: JSON) -> str:
    """What the run is doing here and now: running a turn, awake (its session held), asleep
    (opened once, let go), or "-" (no session opened yet)."""
    session = run.get("session") or {}
    if run.get("running"):
        return "running"
    if session.get("awake"):
        return "awake"
    return "asleep" if session.get("opened") else "-"


def _run_where(run: JSON) -> str:
    if run.get("thread_id"):
        return str(run["thread_id"])
    return f"task {run.get('task_id')}" if run.get("task_id") else "-"


def _run_status(run: JSON) -> str:
    status = str(run.get("status", "?"))
    failures = run.get("failures") or 0
    return f"{status} ({failures} failures)" if failures else status


def _print_runs(runs: list[JSON]) -> None:
    rows = [
        [
            str(r.get("id", "")),
            str(r.get("role", "")),
            _run_where(r),
            _run_status(r),
            str(r.get("cursor", "")),
            str(r.get("turns", "")),
            str((r.get("session") or {}).get("number", "")),
            _run_now(r),
        ]
        for r in runs
    ]
    header = ["RUN", "ROLE", "THREAD", "STATUS", "CURSOR", "TURNS", "SESSION", "NOW"]
    print(table([header, *rows]))


def _print_run(run: JSON, *, note: str | None = None) -> None:
    session = run.get("session") or {}
    opened = f"opened {session.get('opened_at')}" if session.get("opened") else "not opened yet"
    fields = [
        ["run", str(run.get("id", "")) + (f"  ({note})" if note else "")],
        ["role", str(run.get("role", ""))],
        ["kind", str(run.get("kind", ""))],
        ["task", str(run["task_id"])] if run.get("task_id") else ["thread", _run_where(run)],
        ["status", _run_status(run)],
        ["cursor", str(run.get("cursor", ""))],
        ["turns", str(run.get("turns", ""))],
        ["session", f"{session.get('number', '?')}  ({opened})"],
        ["now", _run_now(run)],
        ["created_at", str(run.get("created_at", ""))],
        ["updated_at", str(run.get("updated_at", ""))],
    ]
    if run.get("last_error"):
        fields.append(["last_error", one_line(str(run["last_error"]))])
    print(table(fields))


def _print_turns(turns: list[JSON]) -> None:
    rows = [
        [
            str(t.get("number", "")),
            str(t.get("finished_at", "")),
            str(t.get("cause", "")),
            str(t.get("outcome", "")),
            f"{t.get('cursor_from')} -> {t.get('cursor_to')}",
            _duration(t.get("duration_ms")),
            str(len(t.get("replies") or [])),
            one_line(str(t["error"])) if t.get("error") else "-",
        ]
        for t in turns
    ]
    header = ["TURN", "FINISHED_AT", "CAUSE", "OUTCOME", "CURSOR", "DURATION", "REPLIES", "ERROR"]
    print(table([header, *rows]))


def _duration(ms: object) -> str:
    if not isinstance(ms, int | float):
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    return f"{ms / 1000:.1f} s"
