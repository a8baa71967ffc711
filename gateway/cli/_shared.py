"""What the command modules share: failing in one line, the options and the client every command
that talks to a running gateway takes, the settings, the database guard, and the table output.

- A command fails by raising `Failure(message, exit_code)`; `gateway.cli.main` prints it as one
  line `rolecall: …` and exits with its code: `EXIT_FAILURE` (1) when the gateway or the database
  refused or could not be reached, `EXIT_USAGE` (2, argparse's own) for a usage or configuration
  error.
- The gateway is `--url`, else `ROLECALL_URL`, else `DEFAULT_URL`; the token is `--token`, else
  `ROLECALL_API_TOKEN`, else the token file `rolecall serve` created (`ROLECALL_VAR_DIR/api-token`,
  a relative directory taken from the current directory: a missing file is named in full). The
  settings are read only when a command needs them, and only then are pydantic and SQLAlchemy
  imported.
- Text given as `-` is read from stdin, without the line ending(s) it ends with (`echo hi |`
  sends "hi"), as the shell's `$(…)` would.
- Output is a table (aligned columns, two spaces apart), or with `--json` the gateway's JSON as
  it came.

Command modules import from here (and `gateway.cli.client`), never from `gateway.cli.main` nor
from each other.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.cli.client import DEFAULT_URL, JSON, GatewayClient, check_base_url

if TYPE_CHECKING:
    from gateway.settings import Settings

EXIT_FAILURE = 1
EXIT_USAGE = 2

Command = Callable[[argparse.Namespace], int]
T = TypeVar("T")


class Failure(Exception):
    """A command failed for a reason the user can act on; the message is one line."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


# -- options ---------------------------------------------------------------------------------------


def json_option() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--json", action="store_true", help="print the JSON response as it came")
    return options


def gateway_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False, parents=[json_option()])
    options.add_argument(
        "--url", help=f"the running gateway (default: $ROLECALL_URL, else {DEFAULT_URL})"
    )
    options.add_argument(
        "--token",
        help="operator API token (default: $ROLECALL_API_TOKEN, else the token file "
        "the gateway created under ROLECALL_VAR_DIR)",
    )
    return options


def command_group(commands: Any, name: str, help_text: str, description: str | None = None) -> Any:
    """A group of subcommands (`rolecall thread …`), one of which must be given."""
    return commands.add_parser(name, help=help_text, description=description).add_subparsers(
        title="commands", metavar="COMMAND", required=True
    )


def gateway_command(
    group: Any, name: str, command: Command, help_text: str
) -> argparse.ArgumentParser:
    """A subcommand that talks to a running gateway: `--json`, `--url` and `--token`."""
    sub: argparse.ArgumentParser = group.add_parser(
        name, help=help_text, description=help_text, parents=[gateway_options()]
    )
    sub.set_defaults(command=command)
    return sub


def count(minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


# -- settings, the gateway, the database -----------------------------------------------------------


def read_settings(**overrides: object) -> Settings:
    """The settings from the environment, with `overrides` (a command's options) taking the
    place of the variables they name."""
    from gateway.settings import SettingsError, load_settings

    try:
        return load_settings(**overrides)
    except SettingsError as exc:
        raise Failure(str(exc), EXIT_USAGE) from None


def gateway_url(given: str | None) -> str:
    """The running gateway's base URL: `--url`, else ROLECALL_URL, else the default; checked."""
    try:
        return check_base_url(given or os.environ.get("ROLECALL_URL") or DEFAULT_URL)
    except ValueError as exc:
        raise Failure(str(exc), EXIT_USAGE) from None


def gateway_client(args: argparse.Namespace) -> GatewayClient:
    url = gateway_url(args.url)
    if args.token:
        return GatewayClient(url, args.token, token_source="given with --token")
    if os.environ.get("ROLECALL_API_TOKEN"):
        token = os.environ["ROLECALL_API_TOKEN"]
        return GatewayClient(url, token, token_source="from ROLECALL_API_TOKEN")
    token, path = _token_from_file()
    return GatewayClient(url, token, token_source=f"read from {path}")


def _token_from_file() -> tuple[str, Path]:
    """The token in the token file, and the file's full path."""
    settings = read_settings()
    path: Path = settings.token_file.absolute()
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        missing = _missing_token_file(settings.var_dir, path)
        raise Failure(f"no operator token: {missing}", EXIT_USAGE) from None
    except OSError as exc:
        raise Failure(f"cannot read the operator token file {path}: {exc}", EXIT_USAGE) from None
    if not token:
        raise Failure(
            f"no operator token: the token file {path} is empty; pass --token or set "
            "ROLECALL_API_TOKEN",
            EXIT_USAGE,
        )
    return token, path


def _missing_token_file(var_dir: Path, path: Path) -> str:
    where = (
        ""
        if var_dir.is_absolute()
        else f" (the var directory {str(var_dir)!r}, ROLECALL_VAR_DIR, is relative to the "
        f"current directory {Path.cwd()}: run this where `rolecall serve` runs, or set "
        "ROLECALL_VAR_DIR to its full path)"
    )
    return (
        f"looked for the token file {path}, which does not exist{where}; pass --token, set "
        "ROLECALL_API_TOKEN, or run `rolecall serve` once to create it"
    )


def read_text(words: Sequence[str]) -> str:
    """The words joined by spaces, or with `-` alone, stdin without its trailing line ending."""
    text = " ".join(words)
    if text != "-":
        return text
    return sys.stdin.read().rstrip("\r\n")


def with_database(url: str, work: Callable[[], T]) -> T:
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


# -- output ----------------------------------------------------------------------------------------


def print_json(data: object) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def table(rows: list[list[str]]) -> str:
    """Aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def output(args: argparse.Namespace, data: JSON, readable: Callable[[JSON], None]) -> int:
    if args.json:
        print_json(data)
    else:
        readable(data)
    return 0


def one_line(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\\n")
