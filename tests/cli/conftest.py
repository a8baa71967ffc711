"""The CLI as a user runs it: `rolecall` subprocesses against a real gateway on loopback.

`gateway` (one per test module) is `rolecall serve` running as a subprocess on a free port with its
own var directory and operator token; `cli` runs `rolecall …` against it. Nothing is mocked: the
CLI's HTTP goes to the real application over a real socket, which stores in a real SQLite file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.serving import free_port

REPO = Path(__file__).resolve().parents[2]
ROLECALL = Path(sys.executable).with_name("rolecall")
TOKEN = "cli-tests-operator-token-0123456789"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


def clean_env(**values: str) -> dict[str, str]:
    """The test process's environment without any ROLECALL_ setting, plus `values`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLECALL_")}
    env.update(values)
    return env


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        assert self.returncode == 0, self.stderr
        return json.loads(self.stdout)

    @property
    def error_line(self) -> str:
        """The one line a failing command prints, checked to be exactly one line and no output."""
        assert self.returncode != 0, self.stdout
        lines = self.stderr.splitlines()
        assert len(lines) == 1, self.stderr
        assert lines[0].startswith("rolecall: "), self.stderr
        assert "Traceback" not in self.stderr
        assert self.stdout == ""
        return lines[0]

    @property
    def final_line(self) -> str:
        """For `serve`, whose log lines come first: the one line it ends with, no traceback."""
        assert self.returncode != 0, self.stdout
        assert "Traceback" not in self.stderr
        line = self.stderr.splitlines()[-1]
        assert line.startswith("rolecall: "), self.stderr
        return line


def run_rolecall(*args: str, env: Mapping[str, str], stdin: str | None = None) -> Result:
    done = subprocess.run(
        [str(ROLECALL), *args],
        env=dict(env),
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@dataclass
class Gateway:
    url: str
    var_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    stdout_file: Path
    stderr_file: Path
    returncode: int | None = field(default=None)

    @property
    def stdout(self) -> str:
        return self.stdout_file.read_text()

    @property
    def stderr(self) -> str:
        return self.stderr_file.read_text()

    def interrupt(self) -> int:
        """Ctrl-C, as a person at the terminal would; the exit status."""
        self.process.send_signal(signal.SIGINT)
        self.returncode = self.process.wait(STOP_TIMEOUT)
        return self.returncode


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def running_gateway(var_dir: Path, **settings: str) -> Iterator[Gateway]:
    """`rolecall serve` on a free port, ready (its /healthz answers) when this yields."""
    port = free_port()
    env = clean_env(
        ROLECALL_VAR_DIR=str(var_dir),
        ROLECALL_HOST="127.0.0.1",
        ROLECALL_PORT=str(port),
        **settings,
    )
    var_dir.mkdir(parents=True, exist_ok=True)
    out, err = var_dir / "serve.stdout", var_dir / "serve.stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [str(ROLECALL), "serve"], env=env, cwd=REPO, stdout=stdout, stderr=stderr
        )
    gateway = Gateway(f"http://127.0.0.1:{port}", var_dir, env, process, out, err)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(gateway.url):
            if process.poll() is not None:
                pytest.fail(f"rolecall serve exited with {process.returncode}:\n{gateway.stderr}")
            if time.monotonic() > deadline:
                pytest.fail(f"rolecall serve did not become healthy:\n{gateway.stderr}")
            time.sleep(0.05)
        yield gateway
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="session")
def rolecall() -> Callable[..., Result]:
    """`rolecall(*args, env=…, stdin=…)`: run the command, return its `Result`."""
    return run_rolecall


@pytest.fixture(scope="session")
def serve() -> Callable[..., AbstractContextManager[Gateway]]:
    """`with serve(var_dir, **ROLECALL_settings) as gateway:` a gateway of the test's own."""
    return running_gateway


@pytest.fixture(scope="session")
def environment() -> Callable[..., dict[str, str]]:
    """`environment(**ROLECALL_values)`: this process's environment with only those settings."""
    return clean_env


@pytest.fixture
def unused_port() -> int:
    return free_port()


ECHO_MANIFEST = """\
name: echo
display_name: Echo
runtime: {kind: builtin, agent: echo}
"""


@pytest.fixture(scope="module")
def gateway_settings() -> dict[str, str]:
    """Extra ROLECALL_ settings of the module's `gateway`: none by default (the repository's
    manifests/roles, served from the checkout; conversations with roles it does not serve are
    accepted, as the thread commands' tests use them). A test module overrides this fixture to
    serve other roles, e.g. with `echo_roles_dir`."""
    return {}


@pytest.fixture(scope="module")
def echo_roles_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A roles directory holding only `echo` (a built-in agent that repeats each person message)."""
    roles = tmp_path_factory.mktemp("roles")
    (roles / "echo.yaml").write_text(ECHO_MANIFEST)
    return roles


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, gateway_settings: dict[str, str]
) -> Iterator[Gateway]:
    settings = {"ROLECALL_ALLOW_UNSERVED_ROLES": "true", **gateway_settings}
    with running_gateway(
        tmp_path_factory.mktemp("gateway"), ROLECALL_API_TOKEN=TOKEN, **settings
    ) as running:
        yield running


class Cli:
    """`rolecall …` with the gateway's URL and token in the environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(self, *args: str, stdin: str | None = None, **env: str) -> Result:
        return run_rolecall(*args, env={**self.env, **env}, stdin=stdin)


@pytest.fixture
def cli(gateway: Gateway, tmp_path: Path) -> Cli:
    return Cli(
        clean_env(
            ROLECALL_URL=gateway.url, ROLECALL_API_TOKEN=TOKEN, ROLECALL_VAR_DIR=str(tmp_path)
        )
    )


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    """An environment with no gateway behind ROLECALL_URL and an empty var directory."""
    return clean_env(
        ROLECALL_URL=f"http://127.0.0.1:{free_port()}", ROLECALL_VAR_DIR=str(tmp_path / "var")
    )
