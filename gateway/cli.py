"""The `rolecall` command: run the gateway, upgrade its database, work with threads and runs.

- `rolecall serve` reads the settings, makes sure there is an operator token, and runs the gateway
  (whose start-up upgrades the schema) until Ctrl-C.
- `rolecall db upgrade` upgrades the schema alone and says which revision is in force.
- `rolecall slack manifest ROLE` writes the Slack app manifest of a role (docs/slack.md).
- `rolecall hook test SOURCE FILE` sends a signed sample delivery to a running gateway
  (`gateway.cli_hooks`; docs/webhooks.md).
- `rolecall thread …`, `rolecall run …` and `rolecall person …` talk to a *running* gateway over
  its HTTP API
  (`gateway.client`), never to the database directly, so that every change reaches the gateway's
  listeners (and its run host) like any other.

Output is a readable table, or with `--json` the gateway's JSON as it came. Every failure is one
line on stderr, `rolecall: …`, and a non-zero exit: 1 when the gateway or the database refused or
could not be reached, 2 for a usage or configuration error (argparse's own code). Never a traceback
(unless ROLECALL_LOG_LEVEL=debug, for an unexpected error).

Heavy imports (aiohttp, pydantic, SQLAlchemy) happen inside the commands that need them, so thread
and run commands start quickly.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from core.model.errors import RolecallError
from gateway.client import DEFAULT_URL, ClientError, GatewayClient, check_base_url

if TYPE_CHECKING:
    from core.model.roles import Role
    from gateway.settings import Settings

PROG = "rolecall"
EXIT_FAILURE = 1
EXIT_USAGE = 2

JSON = dict[str, Any]
Command = Callable[[argparse.Namespace], int]
T = TypeVar("T")


class Failure(Exception):
    """A command failed for a reason the user can act on; the message is one line."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command: Command = args.command
    try:
        return command(args)
    except Failure as exc:
        return _fail(exc.message, exc.exit_code)
    except ClientError as exc:
        return _fail(_client_error_line(exc))
    except RolecallError as exc:
        return _fail(f"{exc.code}: {exc.message}")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`rolecall thread timeline … | head`); say nothing more.
        # Point stdout at /dev/null so the flush at exit does not fail a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:
        if os.environ.get("ROLECALL_LOG_LEVEL", "").lower() == "debug":
            import traceback

            traceback.print_exc()
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return _fail(f"unexpected error: {type(exc).__name__}: {first_line}")


def _fail(message: str, exit_code: int = EXIT_FAILURE) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return exit_code


def _client_error_line(exc: ClientError) -> str:
    if exc.status is None:
        return exc.message
    if exc.status == 401:
        return (
            f"{exc.code}: {exc.message} (pass --token, set ROLECALL_API_TOKEN, "
            "or use the token file the gateway printed at start)"
        )
    return f"{exc.code}: {exc.message}"


# -- the parser ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Rolecall: one ongoing conversation per person and role."
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the gateway (upgrades the schema first)",
        description="Run the gateway on ROLECALL_HOST:ROLECALL_PORT until Ctrl-C.",
    )
    serve.set_defaults(command=serve_command)

    db = commands.add_parser("db", help="database maintenance").add_subparsers(
        title="commands", metavar="COMMAND", required=True
    )
    upgrade = db.add_parser(
        "upgrade", help="upgrade the schema to the newest revision", parents=[_json_option()]
    )
    upgrade.set_defaults(command=db_upgrade_command)

    _add_thread_commands(commands)
    _add_run_commands(commands)
    _add_person_commands(commands)
    _add_slack_commands(commands)
    from gateway.cli_endpoints import add_endpoint_commands  # it uses this module's helpers

    add_endpoint_commands(commands)
    from gateway.cli_memory import add_memory_commands  # it uses this module's helpers

    add_memory_commands(commands)
    from gateway.cli_hooks import add_hook_commands  # it uses this module's helpers

    add_hook_commands(commands)
    return parser


def _json_option() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--json", action="store_true", help="print the JSON response as it came")
    return options


def _gateway_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False, parents=[_json_option()])
    options.add_argument(
        "--url", help=f"the running gateway (default: $ROLECALL_URL, else {DEFAULT_URL})"
    )
    options.add_argument(
        "--token",
        help="operator API token (default: $ROLECALL_API_TOKEN, else the token file "
        "the gateway created under ROLECALL_VAR_DIR)",
    )
    return options


def _add_thread_commands(commands: Any) -> None:
    thread = commands.add_parser(
        "thread",
        help="resolve, read and change threads on a running gateway",
        description="Work with threads through a running gateway's HTTP API.",
    ).add_subparsers(title="commands", metavar="COMMAND", required=True)
    common = [_gateway_options()]

    def add(name: str, command: Command, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = thread.add_parser(
            name, help=help_text, description=help_text, parents=common
        )
        sub.set_defaults(command=command)
        return sub

    sub = add("resolve", resolve_command, "the one thread of a participant set (created if new)")
    sub.add_argument("participants", nargs="+", metavar="ADDR", help="person:<slug> or role:<name>")

    sub = add("show", show_command, "a thread: its participants, their states, its memory policy")
    sub.add_argument("thread_id", metavar="ID")

    sub = add("list", list_command, "the threads a participant is a member of, oldest first")
    sub.add_argument("--participant", required=True, metavar="ADDR")
    sub.add_argument("--after", metavar="ID", help="start after this thread (from a previous page)")
    sub.add_argument("--limit", type=int, metavar="N", help="at most N threads (1-500; 50)")

    sub = add("send", send_command, "post a message to a thread")
    sub.add_argument("thread_id", metavar="ID")
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help="the author")
    sub.add_argument("text", nargs="+", metavar="TEXT", help="the message ('-' reads stdin)")
    sub.add_argument(
        "--wait",
        type=_count(1),
        metavar="SECONDS",
        help="then wait up to SECONDS for the reply (the end of the turn it starts)",
    )

    sub = add("timeline", timeline_command, "a thread's events, oldest first")
    sub.add_argument("thread_id", metavar="ID")
    sub.add_argument(
        "--as", dest="viewer", metavar="ADDR", help="only what this participant may see"
    )
    start = sub.add_mutually_exclusive_group()
    start.add_argument("--after", type=_count(0), metavar="SEQ", help="events after this seq")
    start.add_argument(
        "--before", type=_count(1), metavar="SEQ", help="the newest events before this seq"
    )
    start.add_argument("--latest", action="store_true", help="the newest events")
    sub.add_argument("--limit", type=_count(1), metavar="N", help="at most N events")
    sub.add_argument(
        "--include-archived",
        action="store_true",
        help='also what was said before the latest "start fresh" (archived)',
    )

    sub = add("remove", remove_command, "set a participant's state to removed")
    sub.add_argument("thread_id", metavar="ID")
    sub.add_argument("address", metavar="ADDR")

    sub = add("readd", readd_command, "set a removed participant's state back to active")
    sub.add_argument("thread_id", metavar="ID")
    sub.add_argument("address", metavar="ADDR")

    sub = add("retract", retract_command, "mark one of your own messages retracted")
    sub.add_argument("thread_id", metavar="ID")
    sub.add_argument("message_id", metavar="MESSAGE_ID")
    sub.add_argument("--as", dest="author", required=True, metavar="ADDR", help="its author")
    sub.add_argument("--reason", metavar="TEXT")


def _add_run_commands(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="read and control the runs of roles on a running gateway",
        description="Work with runs (a role's work in a thread) through a running gateway's "
        "HTTP API.",
    ).add_subparsers(title="commands", metavar="COMMAND", required=True)
    common = [_gateway_options()]

    def add(name: str, command: Command, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = run.add_parser(
            name, help=help_text, description=help_text, parents=common
        )
        sub.set_defaults(command=command)
        return sub

    sub = add("list", run_list_command, "the runs of a thread, or of a role (oldest first)")
    which = sub.add_mutually_exclusive_group(required=True)
    which.add_argument("--thread", dest="thread_id", metavar="ID", help="the runs of this thread")
    which.add_argument("--task", dest="task_id", metavar="ID", help="the runs on this task")
    which.add_argument("--role", metavar="NAME", help="the runs of this role (NAME or role:NAME)")
    sub.add_argument("--after", metavar="ID", help="with --role: start after this run")
    sub.add_argument(
        "--limit", type=_count(1), metavar="N", help="with --role: at most N runs (1-500; 50)"
    )

    sub = add("show", run_show_command, "a run: its cursor, status, session and turn count")
    sub.add_argument("run_id", metavar="RUN_ID")

    sub = add("turns", run_turns_command, "a run's finished turns (its transcript), oldest first")
    sub.add_argument("run_id", metavar="RUN_ID")
    sub.add_argument("--after", type=_count(0), metavar="N", help="turns after turn number N")
    sub.add_argument("--limit", type=_count(1), metavar="N", help="at most N turns (1-500; 50)")

    sub = add("cancel", run_cancel_command, "stop the run's running turn at once")
    sub.add_argument("run_id", metavar="RUN_ID")

    sub = add(
        "fresh",
        run_fresh_command,
        "start fresh: open the run's next session; earlier messages are archived",
    )
    sub.add_argument("run_id", metavar="RUN_ID")

    sub = add("token", run_token_command, "mint a run token for the agent tools (shown once)")
    sub.add_argument("run_id", metavar="RUN_ID")


def _add_person_commands(commands: Any) -> None:
    person = commands.add_parser(
        "person",
        help="people and their channel identities on a running gateway",
        description="Work with people, their identities and link codes through a running "
        "gateway's HTTP API.",
    ).add_subparsers(title="commands", metavar="COMMAND", required=True)
    common = [_gateway_options()]

    def add(name: str, command: Command, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = person.add_parser(
            name, help=help_text, description=help_text, parents=common
        )
        sub.set_defaults(command=command)
        return sub

    sub = add("list", person_list_command, "people in slug order")
    sub.add_argument("--after", metavar="SLUG", help="start after this slug (from a previous page)")
    sub.add_argument("--limit", type=_count(1), metavar="N", help="at most N people (1-500; 50)")

    sub = add("show", person_show_command, "a person and their identities")
    sub.add_argument("slug", metavar="SLUG")

    sub = add("create", person_create_command, "create a person")
    sub.add_argument("display_name", metavar="DISPLAY_NAME")
    sub.add_argument("--slug", help="their slug (default: derived from the display name)")
    sub.add_argument("--email")

    sub = add("deactivate", person_deactivate_command, "deactivate: their runs lose their tools")
    sub.add_argument("slug", metavar="SLUG")

    sub = add("activate", person_activate_command, "make a deactivated person active again")
    sub.add_argument("slug", metavar="SLUG")

    sub = add("identity-add", person_identity_add_command, "link a channel identity to a person")
    sub.add_argument("slug", metavar="SLUG")
    sub.add_argument(
        "identity", metavar="IDENTITY", help="web:<site>:<user> or slack:<team>:<user>"
    )

    sub = add("link-code", person_link_code_command, "a one-time link code (shown once)")
    sub.add_argument("slug", metavar="SLUG")
    sub.add_argument("--ttl", type=_count(1), metavar="SECONDS", help="lifetime (default 900)")

    sub = add("redeem", person_redeem_command, "link an identity to a link code's person")
    sub.add_argument("code", metavar="CODE")
    sub.add_argument("identity", metavar="IDENTITY")


def _add_slack_commands(commands: Any) -> None:
    slack = commands.add_parser(
        "slack",
        help="the Slack channel: app manifests of roles",
        description="Work with the Slack apps of roles (docs/slack.md).",
    ).add_subparsers(title="commands", metavar="COMMAND", required=True)
    help_text = "write the Slack app manifest of a role, to create its Slack app from"
    sub = slack.add_parser("manifest", help=help_text, description=help_text)
    sub.add_argument("role", metavar="ROLE", help="the role's name (or role:<name>)")
    sub.add_argument(
        "--out",
        type=Path,
        metavar="PATH",
        help="where to write it (default: manifests/slack/ROLE.yaml)",
    )
    sub.add_argument(
        "--url",
        metavar="BASE_URL",
        help="the gateway's public base URL, as Slack reaches it (default: ROLECALL_PUBLIC_URL, "
        "else http://ROLECALL_HOST:ROLECALL_PORT); HTTP mode only",
    )
    sub.add_argument(
        "--mode",
        choices=("http", "socket"),
        help="how Slack reaches the gateway (default: the role's slack.mode, else http)",
    )
    sub.add_argument(
        "--email-link",
        action="store_true",
        help="also ask for users:read.email, to link people by their verified email in the "
        "workspaces ROLECALL_SLACK_EMAIL_LINK_TEAMS allows",
    )
    sub.set_defaults(command=slack_manifest_command)


def _count(minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


# -- serve and db ----------------------------------------------------------------------------------


def _settings() -> Settings:
    from gateway.settings import SettingsError, load_settings

    try:
        return load_settings()
    except SettingsError as exc:
        raise Failure(str(exc), EXIT_USAGE) from None


def settle_memory() -> None:
    """What starting made — modules, the schema, role manifests, the SDKs' objects — lives as
    long as the process: take it out of the garbage collector's sight (`gc.freeze`). A full
    collection under load then walks only what was made since; with everything start-up made
    in view (some 200,000 objects), one took 30-230 ms on the benchmark machine, and every
    request in flight waited through it (now about 3 ms)."""
    gc.collect()
    gc.freeze()


def serve_command(args: argparse.Namespace) -> int:
    settings = _settings()
    from aiohttp import web

    from core.model.roles import ManifestError
    from gateway.app import build_app
    from gateway.logs import configure_logging
    from gateway.roles import configured_roles
    from gateway.settings import ensure_api_token

    try:  # every manifest is checked before anything is written
        roles = configured_roles(settings)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    try:
        token, token_file = ensure_api_token(settings)
    except OSError as exc:
        path = settings.token_file
        raise Failure(f"cannot create the operator token file {path}: {exc}") from None
    if token_file is not None:
        print(f"operator API token: {token_file}", flush=True)

    configure_logging(settings)
    try:  # a role's Slack app whose named settings are not set, say
        app = build_app(settings, api_token=token, roles=roles)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    started = False

    async def mark_started(_app: web.Application) -> None:
        # Runs after the app's own start-up (schema, database): a later OSError is the socket's.
        nonlocal started
        started = True
        settle_memory()

    app.on_startup.append(mark_started)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    serving = ", ".join(f"role:{name}" for name in sorted(roles)) or "no roles"
    listening = f"Rolecall listening on http://{host}:{settings.port} ({serving})"

    def run() -> None:
        try:
            web.run_app(
                app,
                host=settings.host,
                port=settings.port,
                access_log=None,  # the application writes its own request log
                print=lambda _banner: print(listening, flush=True),
            )
        except OSError as exc:
            if not started:
                raise
            # A name that does not resolve (socket.gaierror) carries a resolver code, not an errno.
            if exc.errno is not None and not isinstance(exc, socket.gaierror):
                reason = os.strerror(exc.errno)
            else:
                reason = exc.strerror or str(exc)
            raise Failure(f"cannot listen on {settings.host}:{settings.port}: {reason}") from None

    _with_database(settings.database, run)
    return 0


def db_upgrade_command(args: argparse.Namespace) -> int:
    settings = _settings()
    import asyncio

    from core.storage.database import upgrade_schema

    url = settings.database
    revision = _with_database(url, lambda: asyncio.run(upgrade_schema(url)))
    if args.json:
        _print_json({"revision": revision})
    else:
        print(f"database at {revision}")
    return 0


def _with_database(url: str, work: Callable[[], T]) -> T:
    """Run `work`, turning "cannot reach / refused by the database" into one line."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    where = make_url(url).render_as_string(hide_password=True)
    try:
        return work()
    except OSError as exc:
        raise Failure(f"cannot reach the database {where}: {exc.strerror or exc}") from None
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        line = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        raise Failure(f"database {where}: {line}") from None


# -- slack -----------------------------------------------------------------------------------------


def slack_manifest_command(args: argparse.Namespace) -> int:
    from channels.slack import manifest

    base_url = None
    if args.url is not None:
        try:
            base_url = manifest.check_base_url(args.url)
        except manifest.ManifestOptionError as exc:
            raise Failure(f"--url: {exc}", EXIT_USAGE) from None
    settings = _settings()
    name = args.role.removeprefix("role:")
    role = _configured_role(settings, name)
    try:
        mode = manifest.app_mode(role, args.mode)
    except manifest.ManifestOptionError as exc:
        raise Failure(f"--mode: {exc}", EXIT_USAGE) from None
    if mode == "socket" and base_url is not None:
        raise Failure("--url: a Socket Mode app has no request URL; leave --url out", EXIT_USAGE)
    if mode == "http" and base_url is None:
        base_url = settings.base_url
    command = f"rolecall slack manifest {name}"
    command += f" --url {base_url}" if base_url is not None else ""
    command += f" --mode {args.mode}" if args.mode is not None and role.slack is None else ""
    command += " --email-link" if args.email_link else ""
    app = manifest.app_manifest(role, mode=mode, base_url=base_url, email_link=args.email_link)
    out: Path = args.out or Path("manifests/slack") / f"{name}.yaml"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(manifest.render(role, app, command=command), encoding="utf-8")
    except OSError as exc:
        raise Failure(f"cannot write {out}: {exc.strerror or exc}") from None
    events = app["settings"]["event_subscriptions"]
    where = f"events at {events['request_url']}" if base_url is not None else "Socket Mode"
    print(f"wrote the Slack app manifest of role:{name} to {out} ({where})")
    return 0


def _configured_role(settings: Settings, name: str) -> Role:
    """The role `name` from the roles directory, as `serve` would read it."""
    from core.model.roles import ManifestError
    from gateway.roles import configured_roles

    try:
        roles = configured_roles(settings)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    role = roles.get(name)
    if role is None:
        known = ", ".join(sorted(roles)) or "none"
        raise Failure(f"no role named {name!r} in {settings.roles_dir} (roles there: {known})")
    return role


# -- thread and run commands -----------------------------------------------------------------------


def _client(args: argparse.Namespace) -> GatewayClient:
    url = args.url or os.environ.get("ROLECALL_URL") or DEFAULT_URL
    try:
        url = check_base_url(url)
    except ValueError as exc:
        raise Failure(str(exc), EXIT_USAGE) from None
    token = args.token or os.environ.get("ROLECALL_API_TOKEN") or _token_from_file()
    return GatewayClient(url, token)


def _token_from_file() -> str:
    path: Path = _settings().token_file
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        token = ""
    except OSError as exc:
        raise Failure(f"cannot read the operator token file {path}: {exc}", EXIT_USAGE) from None
    if not token:
        raise Failure(
            f"no operator token: pass --token, set ROLECALL_API_TOKEN, or run `rolecall serve` "
            f"once to create {path}",
            EXIT_USAGE,
        )
    return token


def resolve_command(args: argparse.Namespace) -> int:
    thread, created = _client(args).resolve_thread(args.participants)
    if args.json:
        _print_json(thread)
    else:
        _print_thread(thread, note="created" if created else "already existed")
    return 0


def show_command(args: argparse.Namespace) -> int:
    return _output(args, _client(args).get_thread(args.thread_id), _print_thread)


def list_command(args: argparse.Namespace) -> int:
    answer = _client(args).list_threads(args.participant, after=args.after, limit=args.limit)
    if args.json:
        _print_json(answer)
        return 0
    threads = answer.get("threads", [])
    if not threads:
        print(f"(no threads for {args.participant})")
        return 0
    rows = [[t["id"], str(t.get("created_at", "")), _participants_cell(t)] for t in threads]
    print(_table([["THREAD", "CREATED_AT", "PARTICIPANTS"], *rows]))
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def send_command(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    if text == "-":
        text = sys.stdin.read()
    client = _client(args)
    event = client.send_message(args.thread_id, args.author, text)
    if args.wait is None:
        return _output(args, event, _print_event)
    replies = _await_replies(client, event, args.wait)
    if args.json:
        _print_json({"message": event, "replies": replies})
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
    page = _client(args).timeline(
        args.thread_id,
        as_participant=args.viewer,
        after=args.after,
        before=args.before,
        latest=args.latest,
        limit=args.limit,
        include_archived=args.include_archived,
    )
    if args.json:
        _print_json(page)
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
    event = _client(args).set_participant_state(args.thread_id, args.address, state)
    return _output(args, event, _print_event)


def retract_command(args: argparse.Namespace) -> int:
    event = _client(args).retract(args.thread_id, args.message_id, args.author, args.reason)
    return _output(args, event, _print_event)


def run_list_command(args: argparse.Namespace) -> int:
    if args.role is None and (args.after is not None or args.limit is not None):
        raise Failure(
            "--after and --limit page the runs of a role (--role); a thread or a task has one "
            "run per role",
            EXIT_USAGE,
        )
    role = args.role.removeprefix("role:") if args.role is not None else None
    answer = _client(args).list_runs(
        thread_id=args.thread_id,
        task_id=args.task_id,
        role=role,
        after=args.after,
        limit=args.limit,
    )
    if args.json:
        _print_json(answer)
        return 0
    runs = answer.get("runs", [])
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


def run_show_command(args: argparse.Namespace) -> int:
    return _output(args, _client(args).get_run(args.run_id), _print_run)


def run_turns_command(args: argparse.Namespace) -> int:
    page = _client(args).run_turns(args.run_id, after=args.after, limit=args.limit)
    if args.json:
        _print_json(page)
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
    answer = _client(args).cancel_turn(args.run_id)
    if args.json:
        _print_json(answer)
        return 0
    print(f"cancelled the running turn of run {args.run_id}")
    run = answer.get("run")
    if isinstance(run, dict):
        _print_runs([run])
    return 0


def run_fresh_command(args: argparse.Namespace) -> int:
    run = _client(args).start_fresh(args.run_id)
    number = (run.get("session") or {}).get("number")
    return _output(args, run, lambda r: _print_run(r, note=f"started fresh: session {number}"))


def run_token_command(args: argparse.Namespace) -> int:
    minted = _client(args).mint_run_token(args.run_id)
    return _output(args, minted, lambda m: print(m["token"]))


def person_list_command(args: argparse.Namespace) -> int:
    answer = _client(args).list_persons(after=args.after, limit=args.limit)
    if args.json:
        _print_json(answer)
        return 0
    persons = answer.get("persons", [])
    if persons:
        rows = [
            [str(p.get("slug")), str(p.get("display_name")), p.get("email") or "-", _state(p)]
            for p in persons
        ]
        print(_table([["SLUG", "DISPLAY_NAME", "EMAIL", "STATE"], *rows]))
    else:
        print("(no people)")
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def person_show_command(args: argparse.Namespace) -> int:
    return _output(args, _client(args).get_person(args.slug), _print_person)


def person_create_command(args: argparse.Namespace) -> int:
    created = _client(args).create_person(args.display_name, slug=args.slug, email=args.email)
    return _output(args, created, lambda p: _print_person(p, note="created"))


def person_deactivate_command(args: argparse.Namespace) -> int:
    person = _client(args).update_person(args.slug, {"active": False})
    return _output(args, person, _print_person)


def person_activate_command(args: argparse.Namespace) -> int:
    person = _client(args).update_person(args.slug, {"active": True})
    return _output(args, person, _print_person)


def person_identity_add_command(args: argparse.Namespace) -> int:
    person = _client(args).add_identity(args.slug, args.identity)
    return _output(args, person, _print_person)


def person_link_code_command(args: argparse.Namespace) -> int:
    made = _client(args).new_link_code(args.slug, ttl_seconds=args.ttl)
    return _output(args, made, lambda m: print(f"{m['code']}  (expires {m['expires_at']})"))


def person_redeem_command(args: argparse.Namespace) -> int:
    person = _client(args).redeem_link_code(args.code, args.identity)
    return _output(args, person, lambda p: _print_person(p, note=f"now has {args.identity}"))


# -- output ----------------------------------------------------------------------------------------


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _table(rows: list[list[str]]) -> str:
    """Aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def _output(args: argparse.Namespace, data: JSON, readable: Callable[[JSON], None]) -> int:
    if args.json:
        _print_json(data)
    else:
        readable(data)
    return 0


def _print_thread(thread: JSON, *, note: str | None = None) -> None:
    policy = thread.get("memory_policy") or {}
    memory = "thread only" if policy.get("thread_only", True) else "shared with the role's threads"
    fields = [
        ["thread", thread["id"] + (f"  ({note})" if note else "")],
        ["created_at", str(thread.get("created_at", ""))],
        ["memory", memory],
    ]
    print(_table(fields))
    print()
    rows = [[p["address"], p["state"]] for p in thread.get("participants", [])]
    print(_table([["PARTICIPANT", "STATE"], *rows]))


def _participants_cell(thread: JSON) -> str:
    return ", ".join(
        p["address"] + ("" if p.get("state") == "active" else f" ({p.get('state')})")
        for p in thread.get("participants", [])
    )


def _print_events(events: list[JSON]) -> None:
    print(_table([["SEQ", "AT", "ID", "KIND", "WHO", "TEXT"], *map(_event_row, events)]))


def _event_row(e: JSON) -> list[str]:
    return [str(e.get("seq", "")), str(e.get("at", "")), str(e.get("id", "")), *_describe(e)]


def _print_event(event: JSON) -> None:
    _print_events([event])


def _describe(event: JSON) -> list[str]:
    """KIND, WHO and TEXT of one event, on one line."""
    kind = str(event.get("kind", "?"))
    if kind == "message":
        text = _one_line(str(event.get("text", "")))
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
            text += f": {_one_line(str(event['reason']))}"
        return [kind, str(event.get("author", "")), text]
    known = {"id", "thread_id", "seq", "position", "at", "kind"}
    rest = {k: v for k, v in event.items() if k not in known}
    text = str(rest.pop("text")) if isinstance(rest.get("text"), str) else ""
    if rest:
        text = f"{text} {json.dumps(rest, ensure_ascii=False)}".strip()
    return [kind, "-", _one_line(text)]


def _one_line(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\\n")


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
    print(_table([header, *rows]))


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
        fields.append(["last_error", _one_line(str(run["last_error"]))])
    print(_table(fields))


def _state(person: JSON) -> str:
    state = str(person.get("state", "?"))
    return f"merged into {person['merged_into']}" if person.get("merged_into") else state


def _print_person(person: JSON, *, note: str | None = None) -> None:
    fields = [
        ["person", str(person.get("address", "")) + (f"  ({note})" if note else "")],
        ["display_name", str(person.get("display_name", ""))],
        ["email", person.get("email") or "-"],
        ["state", _state(person)],
        ["created_at", str(person.get("created_at", ""))],
    ]
    print(_table(fields))
    identities = person.get("identities") or []
    print()
    if identities:
        rows = [[str(i.get("identity")), str(i.get("linked_at"))] for i in identities]
        print(_table([["IDENTITY", "LINKED_AT"], *rows]))
    else:
        print("(no identities)")


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
            _one_line(str(t["error"])) if t.get("error") else "-",
        ]
        for t in turns
    ]
    header = ["TURN", "FINISHED_AT", "CAUSE", "OUTCOME", "CURSOR", "DURATION", "REPLIES", "ERROR"]
    print(_table([header, *rows]))


def _duration(ms: object) -> str:
    if not isinstance(ms, int | float):
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    return f"{ms / 1000:.1f} s"
