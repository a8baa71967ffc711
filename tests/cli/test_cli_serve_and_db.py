"""`rolecall serve` and `rolecall db upgrade`, and what the CLI says when something is missing.

Each failure is one line on stderr and a non-zero exit: 2 for a bad setting or usage, 1 when the
gateway or the database is not there.
"""

from __future__ import annotations

import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.cli.conftest import Gateway, Result
from tests.cli.test_cli_banner import banner_rows

TOKEN = "serve-tests-operator-token-0123456789"


def test_serve_creates_the_token_file_says_where_and_stops_on_ctrl_c(
    tmp_path: Path,
    serve: Callable[..., AbstractContextManager[Gateway]],
    rolecall: Callable[..., Result],
    environment: Callable[..., dict[str, str]],
) -> None:
    var_dir = tmp_path / "var"
    with serve(var_dir) as gateway:
        token_file = var_dir / "api-token"
        assert gateway.stdout.splitlines()[0] == (
            f"Rolecall listening on {gateway.url} (role:concierge)"
        )
        assert banner_rows(gateway.stdout)["operator token"] == [str(token_file)]
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

        # Without --token or ROLECALL_API_TOKEN the CLI reads the same file.
        env = environment(ROLECALL_URL=gateway.url, ROLECALL_VAR_DIR=str(var_dir))
        created = rolecall("thread", "resolve", "person:carol", "role:concierge", env=env)
        assert created.returncode == 0, created.stderr
        assert "(created)" in created.stdout

        assert gateway.interrupt() == 0
        assert "Traceback" not in gateway.stderr


@pytest.mark.parametrize("port", ["not-a-port", "70000", "0"])
def test_a_bad_port_stops_serve_with_one_line_naming_it(
    tmp_path: Path,
    port: str,
    rolecall: Callable[..., Result],
    environment: Callable[..., dict[str, str]],
) -> None:
    env = environment(ROLECALL_VAR_DIR=str(tmp_path), ROLECALL_PORT=port)
    failed = rolecall("serve", env=env)
    assert failed.returncode == 2
    assert failed.error_line.startswith("rolecall: ROLECALL_PORT: ")


def test_a_bad_database_url_stops_db_upgrade_with_one_line_naming_it(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    env = environment(ROLECALL_VAR_DIR=str(tmp_path), ROLECALL_DATABASE_URL="mysql://x")
    failed = rolecall("db", "upgrade", env=env)
    assert failed.returncode == 2
    assert failed.error_line.startswith("rolecall: ROLECALL_DATABASE_URL: ")


def test_serve_on_a_port_in_use_says_so(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = environment(
            ROLECALL_VAR_DIR=str(tmp_path), ROLECALL_PORT=str(port), ROLECALL_API_TOKEN=TOKEN
        )
        failed = rolecall("serve", env=env)
    assert failed.returncode == 1
    assert (
        failed.final_line == f"rolecall: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


def test_db_upgrade_on_a_fresh_sqlite_file(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    var_dir = tmp_path / "fresh"
    env = environment(ROLECALL_VAR_DIR=str(var_dir))

    first = rolecall("db", "upgrade", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("database at ")
    assert (var_dir / "rolecall.db").is_file()

    revision = first.stdout.strip().removeprefix("database at ")
    assert revision not in ("", "base", "None")
    again = rolecall("db", "upgrade", "--json", env=env)
    assert again.json() == {"revision": revision}


def test_db_upgrade_with_an_explicit_database_url(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    database = tmp_path / "elsewhere" / "rolecall.db"
    env = environment(
        ROLECALL_VAR_DIR=str(tmp_path / "var"),
        ROLECALL_DATABASE_URL=f"sqlite+aiosqlite:///{database}",
    )
    upgraded = rolecall("db", "upgrade", env=env)
    assert upgraded.returncode == 0, upgraded.stderr
    assert database.is_file()


def test_no_gateway_running_gives_a_clear_line(
    offline_env: dict[str, str], rolecall: Callable[..., Result]
) -> None:
    url = offline_env["ROLECALL_URL"]
    failed = rolecall("thread", "show", "some-id", "--token", TOKEN, env=offline_env)
    assert failed.returncode == 1
    assert failed.error_line == (
        f"rolecall: no gateway answers at {url} — start it with `rolecall serve`"
    )


def test_no_token_anywhere_says_how_to_get_one(
    offline_env: dict[str, str], rolecall: Callable[..., Result]
) -> None:
    failed = rolecall("thread", "show", "some-id", env=offline_env)
    assert failed.returncode == 2
    line = failed.error_line
    assert line.startswith("rolecall: no operator token: ")
    assert str(Path(offline_env["ROLECALL_VAR_DIR"]) / "api-token") in line


def test_a_malformed_url_is_a_usage_error(
    offline_env: dict[str, str], rolecall: Callable[..., Result]
) -> None:
    failed = rolecall(
        "thread", "show", "x", "--token", TOKEN, "--url", "localhost", env=offline_env
    )
    assert failed.returncode == 2
    assert "must look like http://" in failed.error_line


def test_python_dash_m_gateway_is_the_same_command(offline_env: dict[str, str]) -> None:
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "thread", "show", "x", "--token", TOKEN],
        env=offline_env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("rolecall: no gateway answers at ")

    usage = subprocess.run(
        [sys.executable, "-m", "gateway"],
        env=offline_env,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert usage.returncode == 0, usage.stderr
    assert usage.stdout.startswith("usage: rolecall")


def test_a_bad_role_manifest_stops_serve_with_one_line_naming_file_and_field(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "helper.yaml").write_text(
        "name: helper\ndisplay_name: Helper\nruntime:\n  kind: builtin\n"
    )
    env = environment(ROLECALL_VAR_DIR=str(tmp_path), ROLECALL_ROLES_DIR=str(roles))
    failed = rolecall("serve", env=env)
    assert failed.returncode == 2
    assert failed.error_line == f"rolecall: {roles / 'helper.yaml'}: runtime.agent: Field required"


def test_a_roles_dir_that_does_not_exist_stops_serve(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    missing = tmp_path / "nowhere"
    env = environment(ROLECALL_VAR_DIR=str(tmp_path), ROLECALL_ROLES_DIR=str(missing))
    failed = rolecall("serve", env=env)
    assert failed.returncode == 2
    assert failed.error_line == f"rolecall: ROLECALL_ROLES_DIR: {missing} is not a directory"
