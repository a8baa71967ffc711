"""The `rolecall` entry point: the top-level parser, built from the command modules, and the one
place a failure becomes a line on stderr and an exit status.

Each module of `gateway.cli.commands` adds its group of subcommands (`add_commands`) with the
handler of each as the parsed arguments' `command`; `rolecall` alone prints the help (exit 0).
`main` parses, calls the command, and translates what it raises: a `Failure` or a `ClientError`
(the gateway refused or could not be reached) or a domain error into `rolecall: …` and its exit
status, never a traceback (unless ROLECALL_LOG_LEVEL=debug, for an unexpected error).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from core.model.errors import RolecallError
from gateway.cli._shared import EXIT_FAILURE, Command, Failure
from gateway.cli.client import ClientError
from gateway.cli.commands import (
    approvals,
    audit,
    db,
    doctor,
    endpoints,
    hooks,
    memory,
    people,
    replicas,
    roles,
    runs,
    serve,
    slack,
    tasks,
    threads,
    tokens,
)

PROG = "rolecall"

# Each adds its group of subcommands, in the order `rolecall --help` lists them.
COMMAND_GROUPS = (
    serve.add_commands,
    db.add_commands,
    doctor.add_commands,
    threads.add_commands,
    runs.add_commands,
    tasks.add_commands,
    approvals.add_commands,
    roles.add_commands,
    people.add_commands,
    slack.add_commands,
    endpoints.add_commands,
    memory.add_commands,
    hooks.add_commands,
    replicas.add_commands,
    tokens.add_commands,
    audit.add_commands,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command: Command | None = getattr(args, "command", None)
    if command is None:  # `rolecall` alone
        parser.print_help()
        return 0
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Rolecall: one ongoing conversation per person and role."
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add_commands in COMMAND_GROUPS:
        add_commands(commands)
    return parser


def _fail(message: str, exit_code: int = EXIT_FAILURE) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return exit_code


def _client_error_line(exc: ClientError) -> str:
    if exc.status is None:
        return exc.message
    if exc.status == 401:
        return (
            f"{exc.code}: {exc.message}; give that gateway's token: --token, "
            "ROLECALL_API_TOKEN, or the token file it printed at start"
        )
    return f"{exc.code}: {exc.message}"
