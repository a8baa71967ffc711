"""Faults of the world around the gateway, injected for real.

`pg_cluster` is a PostgreSQL server of the test's own: a fresh cluster (`initdb`) in a
directory of its own, started with `pg_ctl` on a free port of 127.0.0.1, which the test may
restart, stop and start again while a gateway uses it. It runs as the `postgres` user when the
tests run as root (initdb refuses root, and CI runs as root). Whatever happens in the test, the
server is stopped and its directory removed afterwards.

Without the PostgreSQL binaries (`ROLECALL_TEST_PG_BIN`, default the Debian path of
PostgreSQL 15) the tests skip, but when CI is set, where a missing prerequisite fails the run.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import in_ci
from tests.serving import free_port

PG_BIN = Path(os.environ.get("ROLECALL_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
SERVER_USER = "postgres"
CTL_TIMEOUT = 60
"""Seconds `pg_ctl` may take to start or stop the server (it waits, `-w`, up to 30)."""


def _missing(reason: str) -> None:
    if in_ci():
        pytest.fail(f"a PostgreSQL server of the test's own is required in CI: {reason}")
    pytest.skip(f"cannot start a PostgreSQL server of the test's own: {reason}")


@dataclass(frozen=True)
class Cluster:
    """A throwaway PostgreSQL server; `url` is the gateway's URL of its `postgres` database."""

    directory: Path
    port: int
    as_user: tuple[str, ...]
    """The command prefix that runs a program as the server's user (empty: as ourselves)."""

    @property
    def url(self) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(PG_BIN / program), *args],
            capture_output=True,
            text=True,
            timeout=CTL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            server_log = self.log.read_text() if self.log.exists() else ""
            raise AssertionError(
                f"{program} {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}\n{server_log[-4000:]}"
            )

    def _ctl(self, action: str, *args: str, settings: tuple[str, ...] = ()) -> None:
        options = " ".join(
            [f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"]
            + [f"-c {setting}" for setting in settings]
        )
        self._run(
            "pg_ctl",
            action,
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "30",
            *args,
        )

    def init(self) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def start(self, *settings: str) -> None:
        """Start the server; `settings` are its `-c name=value` options for this run."""
        self._ctl("start", settings=settings)

    def stop(self) -> None:
        """A fast shutdown: open transactions roll back, every connection is closed."""
        self._ctl("stop", "-m", "fast")

    def restart(self, *settings: str) -> None:
        """Stop (fast) and start again, as an operator restarting the server would."""
        self._ctl("restart", "-m", "fast", settings=settings)

    def remove(self) -> None:
        """Stop the server if it runs (immediately: nothing here is worth keeping), delete all."""
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [
                    *self.as_user,
                    str(PG_BIN / "pg_ctl"),
                    "stop",
                    "-D",
                    str(self.data),
                    "-m",
                    "immediate",
                    "-w",
                    "-t",
                    "30",
                ],
                capture_output=True,
                timeout=CTL_TIMEOUT,
                check=False,
            )
        shutil.rmtree(self.directory, ignore_errors=True)


def _as_server_user() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        _missing(f"running as root, and there is no {SERVER_USER!r} user to run initdb as")
    runuser = shutil.which("runuser")
    if runuser is None:
        _missing("running as root, and there is no runuser to run initdb as another user")
    return (str(runuser), "-u", SERVER_USER, "--")


@pytest.fixture
def pg_cluster() -> Iterator[Cluster]:
    """A fresh PostgreSQL server of this test's own, started; stopped and removed afterwards."""
    for program in ("initdb", "pg_ctl"):
        if not (PG_BIN / program).is_file():
            _missing(f"{PG_BIN / program} does not exist (set ROLECALL_TEST_PG_BIN)")
    as_user = _as_server_user()
    # Under /tmp, not pytest's tmp_path: the server's user must reach it, and the socket's path
    # must stay short.
    directory = Path(tempfile.mkdtemp(prefix="rolecall-pg-"))
    cluster = Cluster(directory=directory, port=free_port(), as_user=as_user)
    try:
        if as_user:
            user = pwd.getpwnam(SERVER_USER)
            os.chown(directory, user.pw_uid, user.pw_gid)
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
