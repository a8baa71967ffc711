"""`rolecall hook test SOURCE FILE` against `rolecall serve`, both subprocesses: the sample is
signed as the source's sender signs (the secret from the setting the manifest names), the
gateway's status and answer come back on one line, and every failure is one line. A source
whose secret is not set stops `serve` with one line naming the file, the field and the setting.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import TOKEN, Cli, Gateway, Result, clean_env, running_gateway
from tests.serving import free_port
from tests.webhooks.conftest import SECRETS, issue, write_sources

SOURCES_ENV = SECRETS
"""The sources' secrets, in the environment of `serve` and of the CLI."""


@pytest.fixture(scope="module")
def sources_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sources(tmp_path_factory.mktemp("sources"))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, sources_dir: Path) -> Iterator[Gateway]:
    with running_gateway(
        tmp_path_factory.mktemp("gateway"),
        ROLECALL_API_TOKEN=TOKEN,
        ROLECALL_SOURCES_DIR=str(sources_dir),
        **SOURCES_ENV,
    ) as running:
        yield running


@pytest.fixture
def hook(gateway: Gateway, sources_dir: Path, tmp_path: Path) -> Cli:
    return Cli(
        clean_env(
            ROLECALL_URL=gateway.url,
            ROLECALL_SOURCES_DIR=str(sources_dir),
            ROLECALL_VAR_DIR=str(tmp_path),
            **SOURCES_ENV,
        )
    )


def sample(tmp_path: Path, payload: Any, name: str = "sample.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(payload, indent=2))
    return str(path)


def answer_of(stdout: str) -> tuple[int, dict[str, Any]]:
    [line] = stdout.splitlines()
    status, _, rest = line.partition(" ")
    answer: dict[str, Any] = json.loads(rest)
    return int(status), answer


def tasks(gateway: Gateway) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        gateway.url + "/api/v1/tasks", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        found: list[dict[str, Any]] = json.loads(answer.read())["tasks"]
        return found


def test_a_standard_webhooks_sample_creates_the_task_once(
    hook: Cli, gateway: Gateway, tmp_path: Path
) -> None:
    file = sample(tmp_path, {"key": "INC-7", "title": "Printer on fire"})
    sent = hook("hook", "test", "tracker", file, "--id", "msg_cli_1")
    assert sent.returncode == 0, sent.stderr
    status, answer = answer_of(sent.stdout)
    assert status == 200 and answer["duplicate"] is False
    assert answer["task"]["external"] == {"source": "tracker", "key": "INC-7"}
    again = hook("hook", "test", "tracker", file, "--id", "msg_cli_1")
    assert answer_of(again.stdout) == (200, answer | {"duplicate": True, "task": None,
                                                      "events": [], "notes": []})  # fmt: skip
    assert [t["title"] for t in tasks(gateway)].count("Printer on fire") == 1


def test_a_github_sample_is_sent_as_the_event_its_payload_is(hook: Cli, tmp_path: Path) -> None:
    comment = {
        "action": "created",
        "issue": issue(number=11),
        "repository": {"full_name": "acme/app"},
        "comment": {"body": "Same here", "user": {"login": "mona"}},
    }
    sent = hook("hook", "test", "gh", sample(tmp_path, comment))
    status, answer = answer_of(sent.stdout)
    assert status == 200, sent.stderr
    assert [e["kind"] for e in answer["events"]] == ["created", "commented"]
    assert answer["events"][1]["text"] == "mona: Same here"
    ping = hook("hook", "test", "gh", sample(tmp_path, {"zen": "Hi"}, "ping.json"))
    assert answer_of(ping.stdout)[1]["ignored"].startswith("ping")
    forced = hook("hook", "test", "gh", sample(tmp_path, comment, "c.json"), "--event", "push")
    assert "push" in answer_of(forced.stdout)[1]["ignored"]


def test_the_generic_kind_and_stdin(hook: Cli) -> None:
    sent = hook("hook", "test", "forms", "-", stdin=json.dumps({"key": "F-9", "title": "Call"}))
    status, answer = answer_of(sent.stdout)
    assert status == 200 and answer["task"]["external"]["source"] == "forms"


def test_a_refused_sample_is_one_line_with_the_gateway_s_answer(hook: Cli, tmp_path: Path) -> None:
    refused = hook("hook", "test", "tracker", sample(tmp_path, {"key": "NEW-1", "status": "done"}))
    assert refused.returncode == 1
    line = refused.error_line
    assert line.startswith("rolecall: 422 {") and '"unknown_item"' in line


def test_usage_problems_are_one_line_and_exit_2(hook: Cli, tmp_path: Path) -> None:
    file = sample(tmp_path, {"key": "k", "title": "t"})
    unknown = hook("hook", "test", "nobody", file)
    assert unknown.returncode == 2
    assert "no webhook source named 'nobody'" in unknown.error_line
    assert "forms, gh, tracker" in unknown.error_line
    unset = hook("hook", "test", "gh", file, TRACKER_WEBHOOK_SECRET="", GH_WEBHOOK_SECRET="")
    assert unset.returncode == 2
    assert unset.error_line == (
        "rolecall: the setting GH_WEBHOOK_SECRET (the source's secret) is not set"
    )
    (tmp_path / "bad.json").write_text("{nope")
    not_json = hook("hook", "test", "tracker", str(tmp_path / "bad.json"))
    assert not_json.returncode == 2 and "is not JSON" in not_json.error_line
    missing = hook("hook", "test", "tracker", str(tmp_path / "missing.json"))
    assert missing.returncode == 2 and "cannot read" in missing.error_line


def test_no_gateway_is_one_line(hook: Cli, tmp_path: Path) -> None:
    file = sample(tmp_path, {"key": "k", "title": "t"})
    down = hook("hook", "test", "tracker", file, ROLECALL_URL=f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 1 and "no gateway answers at" in down.error_line


def test_a_source_whose_secret_is_not_set_stops_serve(
    tmp_path: Path, rolecall: Callable[..., Result], environment: Callable[..., dict[str, str]]
) -> None:
    sources = write_sources(tmp_path / "sources")
    env = environment(
        ROLECALL_VAR_DIR=str(tmp_path / "var"),
        ROLECALL_SOURCES_DIR=str(sources),
        ROLECALL_PORT=str(free_port()),
        TRACKER_WEBHOOK_SECRET=SECRETS["TRACKER_WEBHOOK_SECRET"],
        FORMS_WEBHOOK_SECRET=SECRETS["FORMS_WEBHOOK_SECRET"],
    )
    failed = rolecall("serve", env=env)
    assert failed.returncode == 2
    assert failed.final_line == (
        f"rolecall: {sources / 'gh.yaml'}: secret: the setting GH_WEBHOOK_SECRET is not set"
    )
