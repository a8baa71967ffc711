"""SQLite serves one process (`gateway.single_process`): a second `rolecall serve` on the same
SQLite file stops at start with one line naming the database and the first one's pid; once the
first is killed (SIGKILL, no clean-up) a new one starts, since the lock died with its process.
`rolecall db upgrade` beside a running gateway is not refused."""

from __future__ import annotations

import signal
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from gateway.single_process import sqlite_file
from tests.cli.conftest import Gateway, Result
from tests.serving import free_port

TOKEN = "one-process-tests-operator-token-0123456789"


def _refusal(database: Path, pid: int) -> str:
    return (
        f"rolecall: another rolecall serve is using {database} (pid {pid}); SQLite serves one "
        "process — use PostgreSQL for several (docs/scale.md)"
    )


def test_a_second_serve_on_the_same_sqlite_file_is_refused_until_the_first_dies(
    tmp_path: Path,
    serve: Callable[..., AbstractContextManager[Gateway]],
    rolecall: Callable[..., Result],
) -> None:
    var_dir = tmp_path / "var"
    database = var_dir / "rolecall.db"
    with serve(var_dir, ROLECALL_API_TOKEN=TOKEN) as first:
        lock = var_dir / "rolecall.db.lock"
        assert lock.read_text() == f"{first.process.pid}\n"

        second = rolecall("serve", env={**first.env, "ROLECALL_PORT": str(free_port())})
        assert second.returncode == 1
        assert second.error_line == _refusal(database, first.process.pid)

        upgraded = rolecall("db", "upgrade", env=first.env)
        assert upgraded.returncode == 0, upgraded.stderr

        first.process.send_signal(signal.SIGKILL)
        first.process.wait()

    with serve(var_dir, ROLECALL_API_TOKEN=TOKEN) as after_the_crash:
        assert lock.read_text() == f"{after_the_crash.process.pid}\n"
        assert after_the_crash.interrupt() == 0


def test_the_same_file_named_by_an_explicit_url_is_the_same_claim(
    tmp_path: Path,
    serve: Callable[..., AbstractContextManager[Gateway]],
    rolecall: Callable[..., Result],
) -> None:
    database = tmp_path / "shared" / "rolecall.db"
    url = f"sqlite+aiosqlite:///{database}"
    with serve(tmp_path / "a", ROLECALL_API_TOKEN=TOKEN, ROLECALL_DATABASE_URL=url) as first:
        env = {
            **first.env,
            "ROLECALL_VAR_DIR": str(tmp_path / "b"),
            "ROLECALL_PORT": str(free_port()),
        }
        second = rolecall("serve", env=env)
        assert second.error_line == _refusal(database, first.process.pid)


@pytest.mark.parametrize(
    ("url", "claimed"),
    [
        ("sqlite+aiosqlite:///var/rolecall.db", Path("var/rolecall.db")),
        ("sqlite+aiosqlite:////srv/rolecall.db", Path("/srv/rolecall.db")),
        ("sqlite+aiosqlite:///:memory:", None),
        ("sqlite+aiosqlite://", None),
        ("postgresql+asyncpg://postgres@127.0.0.1:5432/rolecall", None),
    ],
)
def test_only_a_sqlite_file_is_claimed(url: str, claimed: Path | None) -> None:
    assert sqlite_file(url) == claimed
