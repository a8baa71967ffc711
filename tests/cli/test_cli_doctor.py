"""`rolecall doctor`: one line a check, what to do about each failure, exit 1 on any failure.
Checked against real parts on loopback: an ACP agent process that answers `initialize`, an
OpenAI-compatible server's `/models`, an A2A agent's card, the fake Slack's `auth.test`, real
SQLite files and a PostgreSQL port nobody listens on; the command itself as a process."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.cli.commands.doctor import Check, Status, examine
from tests.cli.conftest import Result, clean_env
from tests.runtimes.a2a_agent import serve_agent
from tests.runtimes.fake_openai import FakeOpenAI
from tests.runtimes.test_acp_runtime import FAKE
from tests.serving import free_port
from tests.slack.fake_slack import ALICE, FakeSlack

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean environment: no ROLECALL_ setting but a var directory and a roles directory of
    the test's own."""
    for name in list(os.environ):
        if name.startswith("ROLECALL_"):
            monkeypatch.delenv(name)
    roles = tmp_path / "roles"
    roles.mkdir()
    monkeypatch.setenv("ROLECALL_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("ROLECALL_ROLES_DIR", str(roles))
    return roles


def _by_what(checks: list[Check]) -> dict[str, Check]:
    return {check.what: check for check in checks}


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users=(ALICE,)) as fake:
        yield fake


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


async def test_each_kind_of_agent_is_reached_and_said_to_answer(
    here: Path, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    (here / "local.yaml").write_text(
        "name: local\ndisplay_name: Local\n"
        f"runtime: {{kind: openai, base_url: '{model.base_url}', model: fake-model}}\n"
    )
    (here / "coder.yaml").write_text(
        "name: coder\ndisplay_name: Coder\n"
        f"runtime: {{kind: acp, command: '{sys.executable}', args: ['{FAKE}'],"
        " secrets: {FAKE_SECRET: DOCTOR_FAKE_SECRET}}\n"
    )
    monkeypatch.setenv("DOCTOR_FAKE_SECRET", "s3cret")
    (here / "echo.yaml").write_text(
        "name: echo\ndisplay_name: Echo\nruntime: {kind: builtin, agent: echo}\n"
    )
    async with serve_agent(value="Bearer card-token") as agent:
        (here / "support.yaml").write_text(
            "name: support\ndisplay_name: Support\n"
            f"runtime: {{kind: a2a, card_url: '{agent.card_url}',"
            " auth: {kind: bearer, token: DOCTOR_A2A_TOKEN}}\n"
        )
        monkeypatch.setenv("DOCTOR_A2A_TOKEN", "card-token")
        checks = _by_what(await examine())
    assert checks["roles"].said == "role:coder, role:echo, role:local, role:support"
    assert checks["database"].status is Status.WARN and "no schema yet" in checks["database"].said
    local = checks["role:local agent (openai)"]
    assert local.status is Status.OK and "serves the model 'fake-model'" in local.said
    coder = checks["role:coder agent (acp)"]
    assert coder.status is Status.OK and "answered initialize" in coder.said, coder
    support = checks["role:support agent (a2a)"]
    assert support.status is Status.OK and "Counter" in support.said, support
    assert checks["role:echo agent (builtin)"].status is Status.OK
    assert all(c.status is not Status.FAIL for c in checks.values()), checks


async def test_what_does_not_answer_fails_with_what_to_do(
    here: Path, model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    model.models = ["other-model", "third-model"]
    (here / "local.yaml").write_text(
        "name: local\ndisplay_name: Local\n"
        f"runtime: {{kind: openai, base_url: '{model.base_url}', model: fake-model}}\n"
    )
    (here / "keyed.yaml").write_text(
        "name: keyed\ndisplay_name: Keyed\n"
        f"runtime: {{kind: openai, base_url: '{model.base_url}', model: fake-model,"
        " api_key: DOCTOR_KEY}\n"
    )
    monkeypatch.setenv("DOCTOR_KEY", "wrong")
    (here / "gone.yaml").write_text(
        "name: gone\ndisplay_name: Gone\n"
        f"runtime: {{kind: openai, base_url: 'http://127.0.0.1:{free_port()}/v1', model: m}}\n"
    )
    (here / "coder.yaml").write_text(
        "name: coder\ndisplay_name: Coder\nruntime: {kind: acp, command: no-such-acp-agent}\n"
    )
    (here / "quitter.yaml").write_text(  # starts, but is no ACP agent
        "name: quitter\ndisplay_name: Quitter\n"
        f"runtime: {{kind: acp, command: '{sys.executable}', args: ['-c', 'print(1)']}}\n"
    )
    (here / "support.yaml").write_text(
        "name: support\ndisplay_name: Support\n"
        f"runtime: {{kind: a2a, card_url: 'http://127.0.0.1:{free_port()}/card.json'}}\n"
    )
    checks = _by_what(await examine())
    local = checks["role:local agent (openai)"]
    assert local.status is Status.FAIL
    assert "does not serve the model 'fake-model' (it lists: other-model, third-model)" in (
        local.said
    )
    assert "runtime.model" in local.fix
    keyed = checks["role:keyed agent (openai)"]
    assert (
        keyed.status is Status.FAIL
        and "refused the key" in keyed.said
        and "DOCTOR_KEY" in (keyed.said)
    )
    assert "wrong" not in keyed.line()  # the key itself is never shown
    assert checks["role:gone agent (openai)"].status is Status.FAIL
    assert "did not answer" in checks["role:gone agent (openai)"].said
    coder = checks["role:coder agent (acp)"]
    assert coder.status is Status.FAIL and "'no-such-acp-agent' is not on PATH" in coder.said
    assert coder.fix.startswith("install it")
    quitter = checks["role:quitter agent (acp)"]
    assert quitter.status is Status.FAIL and quitter.said.startswith("initialize: "), quitter
    support = checks["role:support agent (a2a)"]
    assert support.status is Status.FAIL and "agent card" in support.said
    assert "card_url" in support.fix


async def test_slack_apps_are_checked_with_auth_test_and_need_an_https_url(
    here: Path, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    (here / "echo.yaml").write_text(
        "name: echo\ndisplay_name: Echo\nruntime: {kind: builtin, agent: echo}\n"
        "slack: {mode: http, signing_secret: DOCTOR_SIGNING, bot_token: DOCTOR_BOT}\n"
    )
    monkeypatch.setenv("ROLECALL_SLACK_API_URL", fake_slack.api_url)
    monkeypatch.setenv("DOCTOR_SIGNING", fake_slack.app.signing_secret)
    monkeypatch.setenv("DOCTOR_BOT", fake_slack.bot.token)
    checks = _by_what(await examine())
    slack = checks["role:echo Slack app"]
    assert slack.status is Status.OK and slack.said.startswith("auth.test: the bot"), slack
    url = checks["public URL"]
    assert url.status is Status.FAIL and "ROLECALL_PUBLIC_URL" in url.fix

    monkeypatch.setenv("DOCTOR_BOT", "xoxb-not-a-token")
    monkeypatch.setenv("ROLECALL_PUBLIC_URL", "https://chat.example.com")
    checks = _by_what(await examine())
    slack = checks["role:echo Slack app"]
    assert slack.status is Status.FAIL and "auth.test answered" in slack.said
    assert "DOCTOR_BOT" in slack.fix
    assert checks["public URL"].status is Status.OK

    monkeypatch.delenv("DOCTOR_SIGNING")
    slack = _by_what(await examine())["role:echo Slack app"]
    assert slack.status is Status.FAIL and slack.said == "the setting DOCTOR_SIGNING is not set"


async def test_a_database_that_cannot_be_reached_fails(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (here / "echo.yaml").write_text(
        "name: echo\ndisplay_name: Echo\nruntime: {kind: builtin, agent: echo}\n"
    )
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nothing"
    monkeypatch.setenv("ROLECALL_DATABASE_URL", url)
    database = _by_what(await examine())["database"]
    assert database.status is Status.FAIL and "ROLECALL_DATABASE_URL" in database.fix


async def test_widget_sites_without_origins_or_on_plain_http_are_warned_of(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = (
        '{"shop": {"origins": ["https://shop.example.com"]},'
        ' "blog": {"origins": []}, "old": {"origins": ["http://old.example.com"]}}'
    )
    monkeypatch.setenv("ROLECALL_SITES", sites)
    checks = _by_what(await examine())
    assert checks["widget site shop"].status is Status.OK
    assert checks["widget site blog"].status is Status.WARN
    assert checks["widget site old"].status is Status.WARN
    assert checks["public URL"].status is Status.WARN  # pages elsewhere, no public URL
    assert checks["roles"].status is Status.FAIL  # the test's roles directory is empty


def test_the_command_prints_a_line_a_check_and_exits_by_the_worst(
    tmp_path: Path, rolecall: Callable[..., Result]
) -> None:
    """The demo role from the checkout, a fresh var directory: nothing fails (the database is
    made at the first `serve`); a bad setting is one FAIL line and exit 1."""
    env = clean_env(ROLECALL_VAR_DIR=str(tmp_path / "var"))
    fine = rolecall("doctor", env=env)
    assert fine.returncode == 0, fine.stdout + fine.stderr
    lines = fine.stdout.splitlines()
    assert lines[0] == "ok    settings: read"
    assert "ok    roles: role:concierge" in lines
    assert any(line.startswith("warn  database: ") for line in lines)
    assert all(line.split()[0] in ("ok", "warn") for line in lines)

    assert rolecall("db", "upgrade", env=env).returncode == 0
    migrated = rolecall("doctor", "--json", env=env)
    [database] = [c for c in migrated.json() if c["what"] == "database"]
    assert database["status"] == "ok" and "at schema" in database["said"]

    bad = rolecall("doctor", env={**env, "ROLECALL_PORT": "nope"})
    assert bad.returncode == 1
    assert bad.stdout.startswith("FAIL  settings: ")


async def test_the_example_manifests_load_and_each_agent_is_checked(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`manifests/examples/` (not loaded by default) validate as the gateway reads them, and the
    doctor checks each one's agent (offline: the ACP commands are looked for, the settings that
    hold secrets too)."""
    monkeypatch.setenv("ROLECALL_ROLES_DIR", str(REPO / "manifests" / "examples"))
    checks = _by_what(await examine(offline=True))
    assert checks["roles"].status is Status.OK
    assert checks["roles"].said == (
        "role:assistant, role:builder, role:coder, role:local, role:support"
    )
    kinds = {"assistant": "openai", "builder": "acp", "coder": "acp", "local": "openai",
             "support": "a2a"}  # fmt: skip
    for name, kind in kinds.items():
        assert f"role:{name} agent ({kind})" in checks
    assert "ASSISTANT_OPENAI_API_KEY" in checks["role:assistant agent (openai)"].said
    assert checks["role:local agent (openai)"].said == "not reached (--offline)"


def test_the_example_webhook_sources_load() -> None:
    """`manifests/examples/sources/` (not loaded by default) validate as the gateway reads
    sources; none is shipped in the default `manifests/sources/`."""
    from channels.webhooks.sources import configured_sources

    sources = configured_sources(REPO / "manifests" / "examples" / "sources", default=False)
    assert {name: s.kind for name, s in sources.items()} == {
        "github": "github",
        "tracker": "standard",
    }
    assert not (REPO / "manifests" / "sources").exists()
