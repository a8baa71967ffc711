"""The CLI in a newcomer's first hour: `rolecall` alone, `serve --host/--port`, the task and role
commands, help for every positional argument, stdin text, and what it says when the token is
wrong or missing or a role is unknown.

Real processes throughout: `rolecall …` subprocesses against `rolecall serve` running on
127.0.0.1 (one gateway for the module, serving the built-in role `echo`; `serve --host/--port`
starts one of its own), which stores in a real SQLite file.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.cli.main import build_parser
from tests.cli.conftest import (
    REPO,
    ROLECALL,
    START_TIMEOUT,
    STOP_TIMEOUT,
    TOKEN,
    Cli,
    Result,
    _healthy,
    clean_env,
)
from tests.serving import free_port


@pytest.fixture(scope="module")
def gateway_settings(echo_roles_dir: Path) -> dict[str, str]:
    """`echo` alone, and the newcomer's default: roles this gateway does not serve refused."""
    return {"ROLECALL_ROLES_DIR": str(echo_roles_dir), "ROLECALL_ALLOW_UNSERVED_ROLES": "false"}


@pytest.fixture
def person() -> str:
    return f"person:h-{uuid.uuid4().hex[:8]}"


def fields(table: str) -> dict[str, str]:
    """The `name  value` lines of a command's first table, as a dict."""
    first = table.split("\n\n", 1)[0]
    return dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in first.splitlines())


def rows(table: str) -> list[list[str]]:
    """A table's body rows, split on the two-space column gaps (the header dropped)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.strip().splitlines()[1:]]


# -- rolecall alone, help ----------------------------------------------------------------------


def test_rolecall_alone_prints_the_help_and_exits_0(
    offline_env: dict[str, str], rolecall: Callable[..., Result]
) -> None:
    """With no command, the help goes to stdout (every command group listed) and the exit is 0."""
    alone = rolecall(env=offline_env)
    assert alone.returncode == 0, alone.stderr
    assert alone.stderr == ""
    assert alone.stdout.startswith("usage: rolecall")
    for group in ("serve", "thread", "run", "task", "role", "person", "memory"):
        assert re.search(rf"^\s+{group}\s", alone.stdout, re.MULTILINE), alone.stdout


def _positionals_without_help(
    parser: argparse.ArgumentParser, path: list[str]
) -> list[tuple[str, str]]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                missing += _positionals_without_help(sub, [*path, name])
        elif not action.option_strings and not action.help:
            missing.append((" ".join(path), str(action.metavar or action.dest)))
    return missing


def test_every_positional_argument_has_help_text(
    offline_env: dict[str, str], rolecall: Callable[..., Result]
) -> None:
    """Walking every command of the parser `rolecall` runs finds no positional argument without
    a help line; one command's `--help`, run for real, shows them."""
    assert _positionals_without_help(build_parser(), ["rolecall"]) == []

    shown = rolecall("task", "comment", "--help", env=offline_env)
    assert shown.returncode == 0, shown.stderr
    positional = shown.stdout.split("positional arguments:")[1].split("options:")[0]
    assert re.search(r"^\s+ID\s+the task's id", positional, re.MULTILINE), shown.stdout
    assert re.search(r"^\s+TEXT\s+the comment", positional, re.MULTILINE), shown.stdout


# -- serve --host / --port -----------------------------------------------------------------------


def test_serve_host_and_port_options_take_the_place_of_the_settings(tmp_path: Path) -> None:
    """`rolecall serve --host 127.0.0.1 --port P` listens on P although ROLECALL_HOST names an
    address this machine does not have and ROLECALL_PORT another port; it says so when it
    listens, and stops on Ctrl-C with exit 0."""
    port, other = free_port(), free_port()
    env = clean_env(
        ROLECALL_VAR_DIR=str(tmp_path / "var"),
        ROLECALL_HOST="192.0.2.1",  # TEST-NET-1: listening there would fail
        ROLECALL_PORT=str(other),
        ROLECALL_API_TOKEN=TOKEN,
    )
    out, err = tmp_path / "serve.stdout", tmp_path / "serve.stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [str(ROLECALL), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=REPO,
            stdout=stdout,
            stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(url):
            assert process.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        assert f"Rolecall listening on {url} (role:concierge)" in out.read_text().splitlines()
        assert not _healthy(f"http://127.0.0.1:{other}")
    finally:
        process.send_signal(signal.SIGINT)
        returncode = process.wait(STOP_TIMEOUT)
    assert returncode == 0, err.read_text()


def test_serve_refuses_a_port_out_of_range_before_starting(
    offline_env: dict[str, str], rolecall: Callable[..., Result]
) -> None:
    """`--port 70000` is a usage error (exit 2) naming the range; nothing is started."""
    failed = rolecall("serve", "--port", "70000", env=offline_env)
    assert failed.returncode == 2
    assert failed.stderr.splitlines()[-1] == (
        "rolecall serve: error: argument --port: a port is 1-65535, not 70000"
    )
    assert not (Path(offline_env["ROLECALL_VAR_DIR"]) / "api-token").exists()


# -- tasks -------------------------------------------------------------------------------------


def test_task_create_list_show_update_and_comment(cli: Cli, person: str) -> None:
    """A task's life from the CLI: created with a body from stdin (its trailing newlines
    dropped), an assignee and an external reference; found by status and assignee; moved,
    unassigned, commented on from stdin; and its history shows each change and who made it."""
    created = cli(
        "task",
        "create",
        "Fix",
        "the printer",
        "--as",
        person,
        "--assignee",
        "echo",
        "--external",
        "tracker:OPS-7",
        "--external-url",
        "https://tracker.example.com/OPS-7",
        "--body",
        "-",
        stdin="It jams on page 2.\n\n",
    )
    assert created.returncode == 0, created.stderr
    shown = fields(created.stdout)
    task_id = shown["task"].split()[0]
    assert shown["task"] == f"{task_id}  (created)"
    assert shown["title"] == "Fix the printer"
    assert shown["status"] == "open" and shown["assignee"] == "echo"
    assert shown["external"] == "tracker:OPS-7  https://tracker.example.com/OPS-7"
    assert created.stdout.rstrip("\n").endswith("\n\nIt jams on page 2.")
    task = cli("task", "show", task_id, "--json").json()
    assert task["body"] == "It jams on page 2."

    listed = cli("task", "list", "--assignee", "echo", "--status", "open")
    assert listed.returncode == 0, listed.stderr
    assert [task_id, "open", "echo"] in [row[:3] for row in rows(listed.stdout)]
    assert task_id in [t["id"] for t in cli("task", "list", "--json").json()["tasks"]]

    moved = cli("task", "update", task_id, "--as", person, "--status", "in_progress", "--unassign")
    assert moved.returncode == 0, moved.stderr
    after = fields(moved.stdout)
    assert after["task"] == f"{task_id}  (updated: assignee, status)"
    assert after["status"] == "in_progress" and after["assignee"] == "-"

    commented = cli(
        "task", "comment", task_id, "--as", person, "--json", "-", stdin="On it.\r\n"
    ).json()
    assert commented["kind"] == "commented" and commented["text"] == "On it."

    history = cli("task", "show", task_id)
    assert history.returncode == 0, history.stderr
    events = {row[2]: row for row in rows(history.stdout.split("\n\n")[-1])}
    assert events["created"][3:] == [person, "Fix the printer"]
    assert events["updated"][3:] == [
        person,
        "status: open -> in_progress; assignee: echo -> -",
    ]
    assert events["commented"][3:] == [person, "On it."]


def test_task_commands_fail_in_one_line(cli: Cli, person: str) -> None:
    """What the gateway refuses (a move its rules forbid, a task it does not have, an assignee
    it does not serve) and what the CLI refuses itself (an update that changes nothing) are
    one line each, with a non-zero exit."""
    task_id = cli("task", "create", "Water the plants", "--as", person, "--json").json()["id"]

    nothing = cli("task", "update", task_id, "--as", person)
    assert nothing.returncode == 2
    assert nothing.error_line.startswith("rolecall: nothing to change: ")

    done = cli("task", "update", task_id, "--as", person, "--status", "done", "--json").json()
    assert done["status"] == "done" and done["event"]["changes"]["status"]["to"] == "done"
    illegal = cli("task", "update", task_id, "--as", person, "--status", "in_progress")
    assert illegal.returncode == 1
    assert illegal.error_line.startswith("rolecall: illegal_status_change: ")

    missing = cli("task", "show", "0" * 32)
    assert missing.returncode == 1
    assert missing.error_line.startswith("rolecall: task_not_found: ")

    unserved = cli("task", "create", "Nobody's", "--as", person, "--assignee", "nobody")
    assert unserved.returncode == 1
    assert unserved.error_line.startswith("rolecall: unknown_role: ")


# -- roles -------------------------------------------------------------------------------------


def test_role_list_and_show(cli: Cli) -> None:
    """`role list` shows each role served with its runtime; `role show` one role's settings and
    instructions (`role:NAME` accepted); an unknown name is one line, exit 1."""
    listed = cli("role", "list")
    assert listed.returncode == 0, listed.stderr
    assert rows(listed.stdout) == [["echo", "Echo", "builtin echo", "-"]]
    assert [r["name"] for r in cli("role", "list", "--json").json()["roles"]] == ["echo"]

    shown = cli("role", "show", "role:echo")
    assert shown.returncode == 0, shown.stderr
    role = fields(shown.stdout)
    assert role["role"] == "role:echo" and role["runtime"] == "builtin echo"
    assert role["concurrent_threads"] == "true" and role["slack"] == "-"

    unknown = cli("role", "show", "ecko")
    assert unknown.returncode == 1
    assert unknown.error_line.startswith("rolecall: role_not_found: ")


def test_run_list_of_a_role_the_gateway_does_not_serve_is_an_error(cli: Cli) -> None:
    """`run list --role` of a name the gateway neither serves nor has runs of fails in one line
    naming the roles it serves; a role it serves is listed (or said to have no runs)."""
    unknown = cli("run", "list", "--role", "ecko")
    assert unknown.returncode == 1
    assert unknown.error_line == (
        "rolecall: unknown_role: this gateway serves no role 'ecko' (it serves role:echo)"
    )
    assert cli("run", "list", "--role", "role:ecko", "--json").returncode == 1

    served = cli("run", "list", "--role", "echo")
    assert served.returncode == 0, served.stderr


def test_a_thread_with_a_role_the_gateway_does_not_serve_is_refused_in_one_line(
    cli: Cli, person: str
) -> None:
    """`thread resolve` with a misspelt role makes nothing: one line naming the roles served,
    and how to accept roles another deployment serves."""
    refused = cli("thread", "resolve", person, "role:ecko")
    assert refused.returncode == 1
    assert refused.error_line.startswith("rolecall: unknown_role: no role named 'ecko'")
    assert "roles served: echo" in refused.error_line
    assert "ROLECALL_ALLOW_UNSERVED_ROLES" in refused.error_line
    assert cli("thread", "resolve", person, "role:echo").returncode == 0


# -- stdin ---------------------------------------------------------------------------------------


def test_a_message_read_from_stdin_loses_its_trailing_newline(cli: Cli, person: str) -> None:
    """`thread send ID --as P -` posts what stdin holds without the line ending(s) it ends with
    (`echo … |`, a heredoc); line breaks inside are kept."""
    thread = cli("thread", "resolve", person, "role:echo", "--json").json()["id"]
    sent = cli("thread", "send", thread, "--as", person, "--json", "-", stdin="two\nlines\n")
    assert sent.json()["text"] == "two\nlines"


# -- the token -----------------------------------------------------------------------------------


def test_a_wrong_token_is_said_to_be_refused_naming_where_it_came_from(
    cli: Cli, tmp_path: Path
) -> None:
    """A token the gateway refuses is reported as refused — from `--token`, from
    ROLECALL_API_TOKEN, or read from the token file (named in full) — never as a missing
    header."""
    wrong = "w" * 24
    given = cli("task", "list", "--token", wrong)
    assert given.returncode == 1
    line = given.error_line
    assert line.startswith(
        f"rolecall: unauthorized: the gateway at {cli.env['ROLECALL_URL']} refused the operator "
        "token (given with --token)"
    )
    assert "header" not in line and "--token" in line

    from_env = cli("role", "list", ROLECALL_API_TOKEN=wrong)
    assert "refused the operator token (from ROLECALL_API_TOKEN)" in from_env.error_line

    var_dir = tmp_path / "elsewhere"
    var_dir.mkdir()
    (var_dir / "api-token").write_text(wrong + "\n")
    env = {k: v for k, v in cli.env.items() if k != "ROLECALL_API_TOKEN"}
    from_file = Cli({**env, "ROLECALL_VAR_DIR": str(var_dir)})("run", "list", "--role", "echo")
    assert f"refused the operator token (read from {var_dir / 'api-token'})" in from_file.error_line


def test_a_missing_token_file_under_a_relative_var_dir_says_where_it_looked(
    tmp_path: Path,
) -> None:
    """With the default var directory (`var`, relative), run from a directory that has none,
    the CLI names the full path it looked at and that the directory is taken from the current
    one; exit 2."""
    here = tmp_path / "somewhere"
    here.mkdir()
    env = clean_env(ROLECALL_URL=f"http://127.0.0.1:{free_port()}")
    done = subprocess.run(
        [str(ROLECALL), "task", "list"],
        env=env,
        cwd=here,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    failed = Result(done.returncode, done.stdout, done.stderr)
    assert failed.returncode == 2
    line = failed.error_line
    cwd = here.resolve()
    assert line.startswith(
        f"rolecall: no operator token: looked for the token file {cwd / 'var' / 'api-token'}, "
        "which does not exist (the var directory 'var', ROLECALL_VAR_DIR, is relative to the "
        f"current directory {cwd}: "
    ), line
    assert "--token" in line and "ROLECALL_API_TOKEN" in line
