"""What `rolecall serve` says once it listens, how it logs, and how a schema upgrade is told.

stdout: a first line scripts rely on (`Rolecall listening on <url> (<roles>)`), then where a
person goes next — the demo page, the widget's script tag, the API and its OpenAPI document, the
MCP endpoint, the operator token file (a full path), each role with its runtime. stderr: log
lines as text when it is a terminal (run here under a pseudo-terminal), as JSON otherwise, unless
ROLECALL_LOG_FORMAT says which; the schema upgrade is one line, whatever the revisions it ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

from core.model.roles import Role
from core.storage.engine import create_engine
from core.storage.migrate import MIGRATIONS
from gateway.cli.commands.serve import banner
from gateway.logs import chosen_format
from gateway.settings import Settings
from tests.cli.conftest import (
    REPO,
    ROLECALL,
    START_TIMEOUT,
    STOP_TIMEOUT,
    TOKEN,
    Gateway,
    clean_env,
)
from tests.serving import free_port

Serve = Callable[..., AbstractContextManager[Gateway]]
TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR) +[\w.]+: .+")


def banner_rows(stdout: str) -> dict[str, list[str]]:
    """The banner's rows under its first line, by label (a row without one continues the
    label above it, as the roles do)."""
    rows: dict[str, list[str]] = {}
    label = ""
    for line in stdout.splitlines()[1:]:
        assert line.startswith("  "), line
        named = re.match(r"  (\S.*?)  +(\S.*)$", line)
        if named is not None and not line.startswith("   "):
            label, value = named.groups()
        else:
            value = line.strip()
        rows.setdefault(label, []).append(value)
    return rows


def migrate_lines(stderr: str) -> list[str]:
    """The messages of the JSON log lines about the schema (none of them Alembic's own)."""
    lines = [json.loads(line) for line in stderr.splitlines()]
    assert not [line for line in lines if line["logger"].startswith("alembic")]
    return [line["message"] for line in lines if line["logger"] == "core.storage.migrate"]


def head_revision() -> str:
    return max(path.name.split("_", 1)[0] for path in (MIGRATIONS / "versions").glob("0*.py"))


# -- the banner, from a real `rolecall serve` ------------------------------------------------------


def test_serve_prints_the_banner_once_it_listens_and_logs_json_when_stderr_is_a_file(
    tmp_path: Path, serve: Serve
) -> None:
    """The repository's roles (the concierge), the token file created under the var directory:
    the listening line first, then every place a person goes next; stderr (a file) is JSON, the
    schema's creation one line."""
    var_dir = tmp_path / "var"
    with serve(var_dir) as gateway:
        url = gateway.url
        lines = gateway.stdout.splitlines()
        assert lines[0] == f"Rolecall listening on {url} (role:concierge)"
        assert banner_rows(gateway.stdout) == {
            "demo page": [f"{url}/"],
            "widget": [f'<script src="{url}/widget.js" data-role="concierge" async></script>'],
            "console": [f"{url}/console (sign in with the operator token)"],
            "HTTP API": [f"{url}/api/v1 (OpenAPI document: {url}/api/v1/openapi.json)"],
            "agent tools": [f"{url}/mcp (MCP)"],
            "operator token": [str(var_dir / "api-token")],
            "roles": ["role:concierge  built-in agent concierge"],
        }
        assert migrate_lines(gateway.stderr) == [f"database created at {head_revision()}"]


def test_a_restart_says_in_one_line_that_the_database_is_up_to_date(
    tmp_path: Path, serve: Serve
) -> None:
    var_dir = tmp_path / "var"
    with serve(var_dir, ROLECALL_API_TOKEN=TOKEN) as first:
        assert first.interrupt() == 0
    with serve(var_dir, ROLECALL_API_TOKEN=TOKEN) as again:
        assert migrate_lines(again.stderr) == [f"database at {head_revision()}, up to date"]
        assert banner_rows(again.stdout)["operator token"] == ["ROLECALL_API_TOKEN"]


def _upgrade_to(connection: Connection, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def _database_at(url: str, revision: str) -> None:
    engine = create_engine(url, pool_size=1, writer=True)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade_to, revision)
    finally:
        await engine.dispose()


def test_an_older_database_is_upgraded_in_one_line_naming_both_revisions(
    tmp_path: Path, serve: Serve
) -> None:
    """A database left at 0012 is upgraded by `serve` to the newest revision, and the log says
    so in one line (where Alembic would say one line for each of the revisions after 0012)."""
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    asyncio.run(_database_at(f"sqlite+aiosqlite:///{var_dir / 'rolecall.db'}", "0012"))
    with serve(var_dir, ROLECALL_API_TOKEN=TOKEN) as gateway:
        assert migrate_lines(gateway.stderr) == [
            f"database upgraded from 0012 to {head_revision()}"
        ]


# -- under a terminal ----------------------------------------------------------------------------


@dataclass
class Terminal:
    """What a pseudo-terminal's reader has seen so far (read on a thread of its own)."""

    seen: bytearray = field(default_factory=bytearray)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def text(self) -> str:
        with self.changed:
            return self.seen.decode(errors="replace").replace("\r\n", "\n")

    def wait_for(self, wanted: str) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        with self.changed:
            while wanted not in self.seen.decode(errors="replace"):
                left = deadline - time.monotonic()
                assert left > 0, f"{wanted!r} never appeared in:\n{self.seen.decode()}"
                self.changed.wait(left)
        return self.text()


def _read(master: int, terminal: Terminal) -> None:
    while True:
        ready, _, _ = select.select([master], [], [], STOP_TIMEOUT)
        if not ready:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child's end is closed: it has exited
            return
        if not chunk:
            return
        with terminal.changed:
            terminal.seen += chunk
            terminal.changed.notify_all()


@contextmanager
def serving_on_a_terminal(var_dir: Path, **settings: str) -> Iterator[tuple[Terminal, Path]]:
    """`rolecall serve` with its stderr on a pseudo-terminal, its stdout in a file; yields once
    the banner is out, and stops it with Ctrl-C."""
    port = free_port()
    env = clean_env(
        ROLECALL_VAR_DIR=str(var_dir),
        ROLECALL_PORT=str(port),
        ROLECALL_API_TOKEN=TOKEN,
        **settings,
    )
    var_dir.mkdir(parents=True, exist_ok=True)
    out = var_dir / "serve.stdout"
    master, slave = pty.openpty()
    terminal = Terminal()
    with out.open("wb") as stdout:
        process = subprocess.Popen(
            [str(ROLECALL), "serve"], env=env, cwd=REPO, stdout=stdout, stderr=slave
        )
    os.close(slave)
    reader = threading.Thread(target=_read, args=(master, terminal), daemon=True)
    reader.start()
    try:
        # The banner comes once the gateway listens, after the schema's line.
        deadline = time.monotonic() + START_TIMEOUT
        while not out.read_text().startswith("Rolecall listening on"):
            assert process.poll() is None, terminal.text()
            assert time.monotonic() < deadline, terminal.text()
            time.sleep(0.05)
        yield terminal, out
    finally:
        process.send_signal(signal.SIGINT)
        try:
            assert process.wait(STOP_TIMEOUT) == 0, terminal.text()
        finally:
            reader.join(STOP_TIMEOUT)
            os.close(master)


def test_on_a_terminal_the_logs_are_text_for_a_person(tmp_path: Path) -> None:
    """ROLECALL_LOG_FORMAT unset (`auto`) and stderr a terminal: every log line is text — time,
    level, logger, message — and the schema's creation is one of them."""
    with serving_on_a_terminal(tmp_path / "var") as (terminal, out):
        said = terminal.wait_for(f"database created at {head_revision()}")
        assert out.read_text().startswith("Rolecall listening on http://127.0.0.1:")
    lines = [line for line in said.splitlines() if line]
    assert lines, said
    assert all(TEXT_LINE.fullmatch(line) for line in lines), said
    assert f"INFO    core.storage.migrate: database created at {head_revision()}" in said
    assert "alembic" not in said


def test_an_explicit_log_format_wins_over_the_terminal(tmp_path: Path) -> None:
    """ROLECALL_LOG_FORMAT=json on a terminal: JSON all the same."""
    with serving_on_a_terminal(tmp_path / "var", ROLECALL_LOG_FORMAT="json") as (terminal, _):
        said = terminal.wait_for("database created at")
    lines = [line for line in said.splitlines() if line]
    assert [json.loads(line)["level"] for line in lines], said  # each line parses
    assert any(json.loads(line)["logger"] == "core.storage.migrate" for line in lines)


# -- the parts -----------------------------------------------------------------------------------


def test_the_format_is_the_setting_s_else_text_on_a_terminal_else_json(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w") as terminal, (tmp_path / "log").open("w") as file:
            assert chosen_format("auto", terminal) == "text"
            assert chosen_format("auto", file) == "json"
            assert chosen_format("json", terminal) == "json"
            assert chosen_format("text", file) == "text"
        assert chosen_format("auto", file) == "json"  # closed: nobody is reading it
    finally:
        os.close(master)


def _role(name: str, runtime: dict[str, object], **more: object) -> Role:
    return Role.model_validate(
        {"name": name, "display_name": name.title(), "runtime": runtime, **more}
    )


ROLES = {
    role.name: role
    for role in (
        _role("coder", {"kind": "acp", "command": "claude-code-acp", "args": ["--verbose"]}),
        _role(
            "local",
            {"kind": "openai", "base_url": "http://127.0.0.1:11434/v1", "model": "qwen3:8b"},
        ),
        _role(
            "remote",
            {"kind": "a2a", "card_url": "https://agents.example.com/.well-known/agent-card.json"},
            slack={"mode": "socket", "bot_token": "REMOTE_BOT", "app_token": "REMOTE_APP"},
        ),
    )
}


def test_each_role_is_named_with_its_runtime_and_the_widget_with_one_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the concierge there is no demo page to list, and the script tag names the first
    role; links use the public URL; a relative token file is shown as a full path."""
    monkeypatch.chdir(tmp_path)
    settings = Settings(
        host="0.0.0.0", port=9000, public_url="https://rolecall.example.com/", var_dir=Path("var")
    )
    lines = banner(settings, ROLES, settings.token_file)
    base = "https://rolecall.example.com"
    assert lines == [
        "Rolecall listening on http://0.0.0.0:9000 (role:coder, role:local, role:remote)",
        f'  widget          <script src="{base}/widget.js" data-role="coder" async></script>',
        f"  console         {base}/console (sign in with the operator token)",
        f"  HTTP API        {base}/api/v1 (OpenAPI document: {base}/api/v1/openapi.json)",
        f"  agent tools     {base}/mcp (MCP)",
        f"  operator token  {tmp_path / 'var' / 'api-token'}",
        "  roles           role:coder   ACP agent: claude-code-acp --verbose",
        "                  role:local   OpenAI-compatible model qwen3:8b at "
        "http://127.0.0.1:11434/v1",
        "                  role:remote  A2A agent at "
        "https://agents.example.com/.well-known/agent-card.json; Slack app (socket mode)",
    ]


def test_with_no_roles_the_banner_says_where_they_would_be() -> None:
    settings = Settings(host="::1", port=8080, public_url="", roles_dir=Path("elsewhere/roles"))
    lines = banner(settings, {}, None)
    assert lines[0] == "Rolecall listening on http://[::1]:8080 (no roles)"
    assert lines[1:] == [
        "  console         http://[::1]:8080/console (sign in with the operator token)",
        "  HTTP API        http://[::1]:8080/api/v1 (OpenAPI document: "
        "http://[::1]:8080/api/v1/openapi.json)",
        "  agent tools     http://[::1]:8080/mcp (MCP)",
        "  operator token  ROLECALL_API_TOKEN",
        "  roles           none: no role manifests in elsewhere/roles",
    ]
