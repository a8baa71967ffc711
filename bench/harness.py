"""What the benchmarks share: free ports, servers in subprocesses, latency statistics, the report.

Every server a benchmark starts listens on 127.0.0.1 and is stopped when the benchmark ends; every
load loop is bounded by a request count and a deadline.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server(
    args: Sequence[str], *, port: int, env: dict[str, str] | None = None, log: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server process until the block ends; wait until its /healthz answers. Its stderr
    goes to `log` when given (to be read after the block), else to a file dropped with it."""
    opened = open(log, "w+b") if log is not None else tempfile.TemporaryFile()  # noqa: SIM115
    with opened as errors:
        process = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        try:
            _wait_until_healthy(process, port, errors)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_healthy(process: subprocess.Popen[bytes], port: int, errors: IO[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            errors.seek(0)
            raise RuntimeError(f"server exited: {errors.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as reply:
                reply.read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def gateway_env(
    workdir: Path, port: int, token: str, *, roles_dir: Path | None = None, database_url: str = ""
) -> dict[str, str]:
    """The environment for `rolecall serve` under a benchmark: its own var dir and port, warning
    logs, and its own roles directory — an empty one unless given, so no role answers (the
    default, manifests/roles, would bring the demo concierge into every thread with role:concierge);
    conversations with roles it does not serve are accepted (`ROLECALL_ALLOW_UNSERVED_ROLES`), as
    the workloads that measure the thread model alone talk to a role nobody answers for.
    """
    if roles_dir is None:
        roles_dir = workdir / "no-roles"
        roles_dir.mkdir(parents=True, exist_ok=True)
    return {
        "ROLECALL_VAR_DIR": str(workdir / "var"),
        "ROLECALL_DATABASE_URL": database_url,
        "ROLECALL_PORT": str(port),
        "ROLECALL_API_TOKEN": token,
        "ROLECALL_ROLES_DIR": str(roles_dir),
        "ROLECALL_LOG_LEVEL": "warning",
        "ROLECALL_ALLOW_UNSERVED_ROLES": "true",
    }


def echo_role(directory: Path, *, idle_sleep_after: float = 300) -> Path:
    """A roles directory holding one manifest, `echo.yaml`: the built-in echo agent."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "echo.yaml").write_text(
        "name: echo\n"
        "display_name: Echo\n"
        "runtime: {kind: builtin, agent: echo}\n"
        "max_concurrent_turns: 64\n"
        f"idle_sleep_after: {idle_sleep_after}\n"
    )
    return directory


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy so far (all cores; /proc/stat: all but idle
    and iowait) — what other processes used, next to a server's own `cpu_seconds`."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Latency:
    count: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @classmethod
    def of(cls, samples: Sequence[float], seconds: float) -> Latency:
        ordered = sorted(samples)

        def pick(q: float) -> float:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

        return cls(len(ordered), seconds, pick(0.50), pick(0.99))

    @property
    def rate(self) -> float:
        return self.count / self.seconds


def machine() -> str:
    """The machine in one line: architecture, cores, CPU model, Python."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip() + ", "
                break
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {model}"
        f"Python {platform.python_version()}"
    )


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")
