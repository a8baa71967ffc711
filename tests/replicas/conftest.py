"""Several real `rolecall serve` processes on one PostgreSQL database: a cluster of replicas.

`cluster` starts replicas (`cluster.start("r1", "r2")`) on a database of the test's own (created
for it on the machine's PostgreSQL and dropped after), each its own process on its own port, all
given the same operator token and widget key, serving the roles the test writes. `cluster.db`
runs SQL on that database, to look at what the replicas agreed on (leases, replicas). A test
talks to the replicas over HTTP only (`Replica.call`, or aiohttp for load). PostgreSQL missing
skips the tests — and fails them when CI is set.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.cli.conftest import REPO, ROLECALL, clean_env
from tests.conftest import ADMIN_URL, _admin, _missing
from tests.serving import free_port

TOKEN = "replicas-test-operator-token-0123456789"
WIDGET_KEY = "replicas-test-widget-key-0123456789abcdef"
START_WITHIN = 40.0
STOP_WITHIN = 20.0

pytestmark = pytest.mark.postgres


@dataclass
class Replica:
    id: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str]

    @property
    def api(self) -> str:
        return self.url + "/api/v1"

    def call(self, path: str, method: str = "GET", body: Any = None) -> Any:
        """The operator API of this replica: the JSON answer (an error answer raises)."""
        request = urllib.request.Request(
            self.api + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=15) as answer:
            return json.loads(answer.read())

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @property
    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Cluster:
    database_url: str
    directory: Path
    roles: Path
    settings: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)

    def start(self, *ids: str, **settings: str) -> list[Replica]:
        """Start these replicas at once; return them once every one is ready (/readyz)."""
        started = [self.spawn(replica_id, settings) for replica_id in ids]
        for replica in started:
            self._await_ready(replica)
        return started

    def spawn(self, replica_id: str, settings: dict[str, str]) -> Replica:
        """Start one replica's process, without waiting for it."""
        port = free_port()
        var = self.directory / f"var-{replica_id}-{uuid.uuid4().hex[:6]}"
        var.mkdir(parents=True)
        given = {
            "ROLECALL_VAR_DIR": str(var),
            "ROLECALL_HOST": "127.0.0.1",
            "ROLECALL_PORT": str(port),
            "ROLECALL_DATABASE_URL": self.database_url,
            "ROLECALL_API_TOKEN": TOKEN,
            "ROLECALL_WIDGET_KEY": WIDGET_KEY,
            "ROLECALL_ROLES_DIR": str(self.roles),
            "ROLECALL_REPLICA_ID": replica_id,
            "ROLECALL_LOG_LEVEL": "info",
        }
        env = clean_env(**{**given, **self.settings, **settings})
        log = var / "serve.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(ROLECALL), "serve"], env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT
            )
        replica = Replica(replica_id, f"http://127.0.0.1:{port}", process, log, env)
        self.replicas.append(replica)
        return replica

    def _await_ready(self, replica: Replica) -> None:
        deadline = time.monotonic() + START_WITHIN
        while not replica.ready():
            if replica.process.poll() is not None:
                pytest.fail(f"replica {replica.id} exited:\n{replica.stderr[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"replica {replica.id} did not become ready:\n{replica.stderr[-4000:]}")
            time.sleep(0.05)

    def stop(self, replica: Replica) -> None:
        """A clean stop (SIGINT, as Ctrl-C or a container's stop would send SIGTERM)."""
        if replica.process.poll() is None:
            replica.process.send_signal(signal.SIGINT)
            try:
                replica.process.wait(STOP_WITHIN)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()

    def kill(self, replica: Replica) -> None:
        """kill -9: no chance to hand anything back."""
        replica.process.kill()
        replica.process.wait(STOP_WITHIN)

    async def db(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        connection = await asyncpg.connect(self.database_url.replace("+asyncpg", ""))
        try:
            return list(await connection.fetch(sql, *args))
        finally:
            await connection.close()

    def close(self) -> None:
        for replica in self.replicas:
            if replica.process.poll() is None:
                replica.process.send_signal(signal.SIGCONT)
                self.stop(replica)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A PostgreSQL database of the test's own and the replicas it starts on it (stopped and
    the database dropped afterwards). Roles go into `cluster.roles` before the first start."""
    name = f"rolecall_cluster_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        _missing(f"{type(exc).__name__}: {exc}")
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    roles = tmp_path / "roles"
    roles.mkdir()
    found = Cluster(f"{base}/{name}", tmp_path, roles)
    try:
        yield found
    finally:
        found.close()
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


ECHO = """\
name: echo
display_name: Echo
runtime: {kind: builtin, agent: echo%s}
idle_sleep_after: 300
"""


def echo_role(cluster: Cluster, *, delay_ms: int = 0) -> None:
    """The echo role (repeats each person message), answering after `delay_ms`."""
    delay = f", delay_ms: {delay_ms}" if delay_ms else ""
    (cluster.roles / "echo.yaml").write_text(ECHO % delay)


async def said_and_echoed(cluster: Cluster) -> dict[str, tuple[list[str], list[str]]]:
    """Per thread: what its people said and what the role said, each in timeline order."""
    rows = await cluster.db(
        "SELECT thread_id, author, text FROM events WHERE kind = 'message' ORDER BY thread_id, seq"
    )
    found: dict[str, tuple[list[str], list[str]]] = {}
    for row in rows:
        said, echoed = found.setdefault(row["thread_id"], ([], []))
        (echoed if row["author"].startswith("role:") else said).append(row["text"])
    return found


async def holder_of(cluster: Cluster, thread_id: str) -> str | None:
    """The replica holding the lease of the thread's run, if one does."""
    rows = await cluster.db(
        "SELECT l.holder FROM leases l JOIN runs r ON r.id = l.subject "
        "WHERE l.kind = 'run' AND r.thread_id = $1 AND l.holder <> ''",
        thread_id,
    )
    return rows[0]["holder"] if rows else None
