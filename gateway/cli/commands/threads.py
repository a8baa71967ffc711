"""`rolecall thread …`: resolve, read and change threads on a running gateway.

    rolecall thread resolve ADDR ADDR…
    rolecall thread show ID
    rolecall thread list --participant ADDR [--after ID] [--limit N]
    rolecall thread send ID --as ADDR [--wait SECONDS] TEXT…
    rolecall thread timeline ID [--as ADDR] [--after SEQ | --before SEQ | --latest] [--limit N]
                                [--include-archived]
    rolecall thread remove ID ADDR / readd ID ADDR
    rolecall thread retract ID MESSAGE_ID --as ADDR [--reason TEXT]

Every change goes through the gateway's HTTP API, never the database, so that the run host and
the channels see it like any other. `send --wait` waits for the first batch of replies after the
message: a turn's end (the role's messages, or a system notice) commits as one batch.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from typing import Any

from gateway.cli._shared import (
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
from gateway.cli.client import JSON, GatewayClient

THREAD_ID_HELP = "the thread's id (from `rolecall thread resolve` or `thread list`)"


def add_commands(commands: Any) -> None:
    thread = command_group(
        commands,
        "thread",
        "resolve, read and change threads on a running gateway",
        "Work with threads through a running gateway's HTTP API.",
    )

    add = partial(gateway_command, thread)

    sub = add("resolve", resolve_command, "the one thread of a participant set (created if new)")
    sub.add_argument("participants", nargs="+", metavar="ADDR", help="person:<slug> or role:<name>")

    sub = add("show", show_command, "a thread: its participants, their states, its memory policy")
    sub.add_argument("thread_id", metavar="ID", help=THREAD_ID_HELP)

    sub = add("list", list_command, "the threads a participant is a member of, oldest first")
    sub.add_argument(
        "--participant", required=True, metavar="ADDR", help="person:<slug> or role:<name>"
    )
    sub.add_argument("--after", metavar="ID", help="start after this thread (from a previous page)")
    sub.add_argument("--limit", type=int, metavar="N", help="at most N threads (1-500; 50)")

    sub = add("send", send_command, "post a message to a thread")
    sub.add_argument("thread_id", metavar="ID", help=THREAD_ID_HELP)
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help="the author")
    sub.add_argument("text", nargs="+", metavar="TEXT", help="the message ('-' reads stdin)")
    sub.add_argument(
        "--wait",
        type=count(1),
        metavar="SECONDS",
        help="then wait up to SECONDS for the reply (the end of the turn it starts)",
    )

    sub = add("timeline", timeline_command, "a thread's events, oldest first")
    sub.add_argument("thread_id", metavar="ID", help=THREAD_ID_HELP)
    sub.add_argument(
        "--as", dest="viewer", metavar="ADDR", help="only what this participant may see"
    )
    start = sub.add_mutually_exclusive_group()
    start.add_argument("--after", type=count(0), metavar="SEQ", help="events after this seq")
    start.add_argument(
        "--before", type=count(1), metavar="SEQ", help="the newest events before this seq"
    )
    start.add_argument("--latest", action="store_true", help="the newest events")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N events")
    sub.add_argument(
        "--include-archived",
        action="store_true",
        help='also what was said before the latest "start fresh" (archived)',
    )

    sub = add("remove", remove_command, "set a participant's state to removed")
    sub.add_argument("thread_id", metavar="ID", help=THREAD_ID_HELP)
    sub.add_argument(
        "address", metavar="ADDR", help="the participant: person:<slug> or role:<name>"
    )

    sub = add("readd", readd_command, "set a removed participant's state back to active")
    sub.add_argument("thread_id", metavar="ID", help=THREAD_ID_HELP)
    sub.add_argument(
        "address", metavar="ADDR", help="the participant: person:<slug> or role:<name>"
    )

    sub = add("retract", retract_command, "mark one of your own messages retracted")
    sub.add_argument("thread_id", metavar="ID", help=THREAD_ID_HELP)
    sub.add_argument("message_id", metavar="MESSAGE_ID", help="the id of the message to retract")
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help="its author")
    sub.add_argument("--reason", metavar="TEXT", help="why (shown with the retraction)")


# -- the commands ----------------------------------------------------------------------------------


def resolve_command(args: argparse.Namespace) -> int:
    thread, created = gateway_client(args).resolve_thread(args.participants)
    if args.json:
        print_json(thread)
    else:
        _print_thread(thread, note="created" if created else "already existed")
    return 0


def show_command(args: argparse.Namespace) -> int:
    return output(args, gateway_client(args).get_thread(args.thread_id), _print_thread)


def list_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).list_threads(args.participant, after=args.after, limit=args.limit)
    if args.json:
        print_json(answer)
        return 0
    threads = answer.get("threads", [])
    if not threads:
        print(f"(no threads for {args.participant})")
        return 0
    rows = [[t["id"], str(t.get("created_at", "")), _participants_cell(t)] for t in threads]
    print(table([["THREAD", "CREATED_AT", "PARTICIPANTS"], *rows]))
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def send_command(args: argparse.Namespace) -> int:
    text = read_text(args.text)
    client = gateway_client(args)
    event = client.send_message(args.thread_id, args.author, text)
    if args.wait is None:
        return output(args, event, _print_event)
    replies = _await_replies(client, event, args.wait)
    if args.json:
        print_json({"message": event, "replies": replies})
    else:
        _print_events([event, *replies])
    if not replies:
        raise Failure(f"no reply within {args.wait}s (the message is posted)")
    return 0


def _await_replies(client: GatewayClient, sent: JSON, seconds: int) -> list[JSON]:
    """What others said in the thread after `sent`, from the first batch that has any: a turn's
    end (the role's messages, or a system notice) commits as one batch."""
    deadline = time.monotonic() + seconds
    cursor = int(sent["position"])
    while (left := deadline - time.monotonic()) > 0:
        page = client.events(after=cursor, wait=max(1, min(int(left), 30)))
        cursor = int(page.get("next", cursor))
        replies = [
            e
            for e in page.get("events", [])
            if e.get("thread_id") == sent["thread_id"]
            and e.get("kind") in ("message", "system")
            and e.get("author") != sent["author"]
        ]
        if replies:
            return replies
    return []


def timeline_command(args: argparse.Namespace) -> int:
    page = gateway_client(args).timeline(
        args.thread_id,
        as_participant=args.viewer,
        after=args.after,
        before=args.before,
        latest=args.latest,
        limit=args.limit,
        include_archived=args.include_archived,
    )
    if args.json:
        print_json(page)
        return 0
    events = page.get("events", [])
    if events:
        _print_events(events)
    else:
        print("(no events)")
    if page.get("more") and page.get("next") is not None:
        backward = args.latest or args.before is not None
        print(f"(more: --{'before' if backward else 'after'} {page['next']})")
    return 0


def remove_command(args: argparse.Namespace) -> int:
    return _set_state(args, "removed")


def readd_command(args: argparse.Namespace) -> int:
    return _set_state(args, "active")


def _set_state(args: argparse.Namespace, state: str) -> int:
    event = gateway_client(args).set_participant_state(args.thread_id, args.address, state)
    return output(args, event, _print_event)


def retract_command(args: argparse.Namespace) -> int:
    event = gateway_client(args).retract(args.thread_id, args.message_id, args.author, args.reason)
    return output(args, event, _print_event)


# -- output ----------------------------------------------------------------------------------------


def _print_thread(thread: JSON, *, note: str | None = None) -> None:
    policy = thread.get("memory_policy") or {}
    memory = "thread only" if policy.get("thread_only", True) else "shared with the role's threads"
    fields = [
        ["thread", thread["id"] + (f"  ({note})" if note else "")],
        ["created_at", str(thread.get("created_at", ""))],
        ["memory", memory],
    ]
    print(table(fields))
    print()
    rows = [[p["address"], p["state"]] for p in thread.get("participants", [])]
    print(table([["PARTICIPANT", "STATE"], *rows]))


def _participants_cell(thread: JSON) -> str:
    return ", ".join(
        p["address"] + ("" if p.get("state") == "active" else f" ({p.get('state')})")
        for p in thread.get("participants", [])
    )


def _print_events(events: list[JSON]) -> None:
    print(table([["SEQ", "AT", "ID", "KIND", "WHO", "TEXT"], *map(_event_row, events)]))


def _event_row(e: JSON) -> list[str]:
    return [str(e.get("seq", "")), str(e.get("at", "")), str(e.get("id", "")), *_describe(e)]


def _print_event(event: JSON) -> None:
    _print_events([event])


def _describe(event: JSON) -> list[str]:
    """KIND, WHO and TEXT of one event, on one line."""
    kind = str(event.get("kind", "?"))
    if kind == "message":
        text = one_line(str(event.get("text", "")))
        if event.get("retracted"):
            text = f"[retracted] {text}"
        context = event.get("context")
        if isinstance(context, dict) and context.get("kind"):
            text = f"{text}  [context: {context['kind']}]"
        return [kind, str(event.get("author", "")), text]
    if kind == "participant_state_changed":
        change = f"{event.get('from_state')} -> {event.get('to_state')}"
        return [kind, str(event.get("participant", "")), change]
    if kind == "retraction":
        text = f"retracts {event.get('target')}"
        if event.get("reason"):
            text += f": {one_line(str(event['reason']))}"
        return [kind, str(event.get("author", "")), text]
    known = {"id", "thread_id", "seq", "position", "at", "kind"}
    rest = {k: v for k, v in event.items() if k not in known}
    text = str(rest.pop("text")) if isinstance(rest.get("text"), str) else ""
    if rest:
        text = f"{text} {json.dumps(rest, ensure_ascii=False)}".strip()
    return [kind, "-", one_line(text)]
