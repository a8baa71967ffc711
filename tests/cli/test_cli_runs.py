"""`rolecall run …` against a running gateway whose run host answers: each command, its table and
its `--json`, and `thread timeline --include-archived` after a "start fresh".

One gateway serves the whole module, with two built-in roles: `echo` (repeats each person message
at once) and `slow` (the same, after 30 s: a turn that is still running when the test cancels it).
Each test uses people of its own, hence threads and runs of its own.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import TOKEN, Cli, Gateway, Result
from tests.cli.test_cli_banner import banner_rows

DEADLINE = 15.0  # seconds to wait for the run host; a built-in turn takes milliseconds

SLOW_MANIFEST = """\
name: slow
display_name: Slow
runtime: {kind: builtin, agent: echo, delay_ms: 30000}
"""


@pytest.fixture(scope="module")
def gateway_settings(echo_roles_dir: Path) -> dict[str, str]:
    (echo_roles_dir / "slow.yaml").write_text(SLOW_MANIFEST)
    return {"ROLECALL_ROLES_DIR": str(echo_roles_dir)}


@pytest.fixture
def person() -> str:
    return f"person:x-{uuid.uuid4().hex[:8]}"


def rows(table: str) -> list[list[str]]:
    """A table's body rows, split on the two-space column gaps (the header dropped)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.strip().splitlines()[1:]]


def fields(table: str) -> dict[str, str]:
    """A `name  value` table as a dict."""
    return dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in table.splitlines())


def resolve(cli: Cli, *participants: str) -> str:
    return str(cli("thread", "resolve", *participants, "--json").json()["id"])


def wait_for(what: str, probe: Callable[[], Any]) -> Any:
    """`probe()` until it gives something truthy, for at most DEADLINE seconds."""
    deadline = time.monotonic() + DEADLINE
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {DEADLINE:g}s waiting for {what}")
        time.sleep(0.05)


def replies(cli: Cli, thread_id: str, role: str, *extra: str) -> list[dict[str, Any]]:
    events = cli("thread", "timeline", thread_id, *extra, "--json").json()["events"]
    return [e for e in events if e["kind"] == "message" and e["author"] == role]


def the_run(cli: Cli, thread_id: str, *, turns: int = 1) -> dict[str, Any]:
    """The thread's one run, once it has finished `turns` turns."""

    def probe() -> dict[str, Any] | None:
        runs = cli("run", "list", "--thread", thread_id, "--json").json()["runs"]
        return runs[0] if runs and runs[0]["turns"] >= turns else None

    run: dict[str, Any] = wait_for(f"turn {turns} of the run in {thread_id}", probe)
    return run


def converse(cli: Cli, person: str, text: str = "hello echo") -> tuple[str, dict[str, Any]]:
    """A thread of `person` and role:echo in which `person` said `text` and echo answered."""
    thread_id = resolve(cli, person, "role:echo")
    sent = cli("thread", "send", thread_id, "--as", person, text)
    assert sent.returncode == 0, sent.stderr
    answer = wait_for("the echo", lambda: replies(cli, thread_id, "role:echo"))
    assert [e["text"] for e in answer] == [text]
    return thread_id, the_run(cli, thread_id)


def test_serve_names_the_roles_of_its_roles_dir(gateway: Gateway) -> None:
    assert gateway.stdout.splitlines()[0] == (
        f"Rolecall listening on {gateway.url} (role:echo, role:slow)"
    )
    assert banner_rows(gateway.stdout)["roles"] == [
        "role:echo  built-in agent echo",
        "role:slow  built-in agent echo",
    ]


def test_an_echo_reply_and_its_run_turns_and_transcript(cli: Cli, person: str) -> None:
    thread_id = resolve(cli, person, "role:echo")
    none_yet = cli("run", "list", "--thread", thread_id)
    assert none_yet.returncode == 0, none_yet.stderr
    assert none_yet.stdout == f"(no runs for thread {thread_id})\n"

    cli("thread", "send", thread_id, "--as", person, "hello echo")
    answer = wait_for("the echo", lambda: replies(cli, thread_id, "role:echo"))
    assert [e["text"] for e in answer] == ["hello echo"]
    run = the_run(cli, thread_id)
    run_id = run["id"]
    assert (run["role"], run["thread_id"], run["status"], run["turns"]) == (
        "echo",
        thread_id,
        "ready",
        1,
    )
    assert run["session"]["number"] == 1

    listed = cli("run", "list", "--thread", thread_id)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:8] == [
        "RUN",
        "ROLE",
        "THREAD",
        "STATUS",
        "CURSOR",
        "TURNS",
        "SESSION",
        "NOW",
    ]
    [row] = rows(listed.stdout)
    assert row[:7] == [run_id, "echo", thread_id, "ready", str(run["cursor"]), "1", "1"]
    assert row[7] in ("awake", "asleep")  # held until it idles (300 s here)
    assert run["cursor"] >= 1

    shown = cli("run", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    about = fields(shown.stdout)
    assert about["run"] == run_id
    assert (about["role"], about["kind"], about["thread"]) == ("echo", "conversation", thread_id)
    assert (about["status"], about["turns"]) == ("ready", "1")
    assert about["session"].startswith("1  (opened ")
    assert "last_error" not in about
    assert cli("run", "show", run_id, "--json").json()["id"] == run_id

    turns = cli("run", "turns", run_id)
    assert turns.returncode == 0, turns.stderr
    assert turns.stdout.split()[:8] == [
        "TURN",
        "FINISHED_AT",
        "CAUSE",
        "OUTCOME",
        "CURSOR",
        "DURATION",
        "REPLIES",
        "ERROR",
    ]
    [turn] = rows(turns.stdout)
    assert turn[0] == "1"
    assert (turn[2], turn[3]) == ("message", "replied")
    assert turn[4] == "0 -> 1"  # it read seq 1, the person's message
    assert re.fullmatch(r"[\d.]+ m?s", turn[5]), turn[5]
    assert (turn[6], turn[7]) == ("1", "-")

    transcript = cli("run", "turns", run_id, "--json").json()
    [record] = transcript["turns"]
    assert (record["number"], record["outcome"], record["error"]) == (1, "replied", None)
    assert record["replies"] == [answer[0]["id"]]
    assert transcript["next"] == 1
    assert cli("run", "turns", run_id, "--after", "1").stdout == "(no turns)\n"

    of_role = cli("run", "list", "--role", "echo", "--json").json()
    assert run_id in [r["id"] for r in of_role["runs"]]
    as_address = cli("run", "list", "--role", "role:echo", "--json").json()
    assert [r["id"] for r in as_address["runs"]] == [r["id"] for r in of_role["runs"]]


def test_runs_of_a_role_page_with_after_and_limit(cli: Cli) -> None:
    mine = {converse(cli, f"person:p{n}-{uuid.uuid4().hex[:8]}")[1]["id"] for n in range(2)}

    seen: list[str] = []
    after: list[str] = []
    for _ in range(200):  # the module holds a handful of echo runs
        page = cli("run", "list", "--role", "echo", "--limit", "1", *after)
        assert page.returncode == 0, page.stderr
        [row] = rows(page.stdout.split("\n(")[0])
        seen.append(row[0])
        more = re.search(r"^\(more: --after (\S+)\)$", page.stdout, re.M)
        if more is None:
            break
        assert more[1] == row[0]
        after = ["--after", more[1]]
    assert mine <= set(seen)
    assert len(seen) == len(set(seen))

    nobody = cli("run", "list", "--role", "nobody")
    assert nobody.returncode == 1
    assert nobody.error_line.startswith("rolecall: unknown_role: ")


def test_cancel_of_an_idle_run_is_refused_in_one_line(cli: Cli, person: str) -> None:
    _, run = converse(cli, person)
    refused = cli("run", "cancel", run["id"])
    assert refused.returncode == 1
    assert refused.error_line == "rolecall: no_turn_running: this run has no turn running"
    assert cli("run", "cancel", run["id"], "--json").error_line.startswith(
        "rolecall: no_turn_running: "
    )


def test_cancel_stops_a_running_turn(cli: Cli, person: str) -> None:
    thread_id = resolve(cli, person, "role:slow")
    cli("thread", "send", thread_id, "--as", person, "take your time")

    def running() -> dict[str, Any] | None:
        runs = cli("run", "list", "--thread", thread_id, "--json").json()["runs"]
        return runs[0] if runs and runs[0]["running"] else None

    run = wait_for("the slow turn to start", running)
    assert rows(cli("run", "list", "--thread", thread_id).stdout)[0][7] == "running"

    cancelled = cli("run", "cancel", run["id"])
    assert cancelled.returncode == 0, cancelled.stderr
    first, table = cancelled.stdout.split("\n", 1)
    assert first == f"cancelled the running turn of run {run['id']}"
    assert rows(table)[0][0] == run["id"]

    finished = the_run(cli, thread_id)
    assert finished["running"] is False
    [turn] = cli("run", "turns", run["id"], "--json").json()["turns"]
    assert turn["outcome"] == "cancelled"
    assert rows(cli("run", "turns", run["id"]).stdout)[0][3] == "cancelled"
    # No echo: a system notice tells the person the turn was stopped.
    assert replies(cli, thread_id, "role:slow") == []
    events = cli("thread", "timeline", thread_id, "--json").json()["events"]
    assert [e["kind"] for e in events] == ["message", "system"]
    assert "stopped by an operator" in events[1]["text"]
    assert turn["replies"] == [events[1]["id"]]


def test_start_fresh_opens_session_2_and_archives_the_timeline(cli: Cli, person: str) -> None:
    thread_id, run = converse(cli, person, "before the fresh start")
    before = cli("thread", "timeline", thread_id, "--json").json()["events"]
    assert [e.get("text") for e in before] == ["before the fresh start"] * 2

    fresh = cli("run", "fresh", run["id"])
    assert fresh.returncode == 0, fresh.stderr
    about = fields(fresh.stdout)
    assert about["run"] == f"{run['id']}  (started fresh: session 2)"
    assert about["session"] == "2  (not opened yet)"
    shown = cli("run", "show", run["id"], "--json").json()
    assert shown["session"]["number"] == 2
    assert shown["session"]["id"] != run["session"]["id"]

    # The archived messages are left out of the timeline, for the operator as for the person...
    for viewer in ([], ["--as", person]):
        after = cli("thread", "timeline", thread_id, *viewer, "--json").json()["events"]
        assert "before the fresh start" not in [e.get("text") for e in after]
        assert after and {e["kind"] for e in after} == {"system"}
        table = cli("thread", "timeline", thread_id, *viewer)
        assert "before the fresh start" not in table.stdout
    # ... unless asked for.
    everything = cli("thread", "timeline", thread_id, "--include-archived", "--json").json()
    texts = [e.get("text") for e in everything["events"]]
    assert texts[:2] == ["before the fresh start"] * 2
    assert everything["events"][-1]["kind"] == "system"
    table = cli("thread", "timeline", thread_id, "--include-archived")
    assert [row[3] for row in rows(table.stdout)] == ["message", "message", "system"]

    # The conversation goes on in the new session.
    cli("thread", "send", thread_id, "--as", person, "after the fresh start")
    wait_for(
        "the echo in session 2",
        lambda: len(replies(cli, thread_id, "role:echo", "--include-archived")) == 2,
    )
    again = the_run(cli, thread_id, turns=2)
    assert again["session"]["number"] == 2
    turns = cli("run", "turns", run["id"], "--json").json()["turns"]
    assert [(t["number"], t["outcome"]) for t in turns] == [(1, "replied"), (2, "replied")]
    assert turns[0]["session_id"] == run["session"]["id"]
    assert turns[1]["session_id"] == shown["session"]["id"]
    now = [e.get("text") for e in cli("thread", "timeline", thread_id, "--json").json()["events"]]
    assert "before the fresh start" not in now
    assert now.count("after the fresh start") == 2


@pytest.mark.parametrize(
    "args",
    [
        ["run", "show", "no-such-run"],
        ["run", "turns", "no-such-run"],
        ["run", "cancel", "no-such-run"],
        ["run", "fresh", "no-such-run"],
        ["run", "show", "no-such-run", "--json"],
    ],
)
def test_an_unknown_run_is_one_line_and_exit_1(cli: Cli, args: list[str]) -> None:
    failed = cli(*args)
    assert failed.returncode == 1
    assert failed.error_line == "rolecall: run_not_found: no run with id 'no-such-run'"


def test_runs_of_an_unknown_thread_is_one_line_and_exit_1(cli: Cli) -> None:
    failed = cli("run", "list", "--thread", "no-such-thread")
    assert failed.returncode == 1
    assert failed.error_line == "rolecall: thread_not_found: no thread with id 'no-such-thread'"


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["run", "list"],  # neither --thread nor --role
        ["run", "list", "--thread", "t", "--role", "echo"],
        ["run", "list", "--thread", "t", "--limit", "2"],
        ["run", "list", "--role", "echo", "--limit", "0"],
        ["run", "turns", "r", "--after", "-1"],
        ["run", "show"],
        ["run", "frobnicate"],
    ],
)
def test_usage_errors_exit_2_without_calling_the_gateway(
    offline_env: dict[str, str], rolecall: Callable[..., Result], args: list[str]
) -> None:
    failed = rolecall(*args, env={**offline_env, "ROLECALL_API_TOKEN": "t" * 20})
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr
    assert failed.stderr.splitlines()[-1].startswith("rolecall")


def test_send_with_wait_prints_the_message_and_the_reply(cli: Cli, person: str) -> None:
    thread_id = resolve(cli, person, "role:echo")
    sent = cli("thread", "send", thread_id, "--as", person, "--wait", "10", "knock knock")
    assert sent.returncode == 0, sent.stderr
    assert [row[3:] for row in rows(sent.stdout)] == [
        ["message", person, "knock knock"],
        ["message", "role:echo", "knock knock"],
    ]
    answer = cli("thread", "send", thread_id, "--as", person, "--wait", "10", "again", "--json")
    body = answer.json()
    assert body["message"]["text"] == "again"
    assert [r["text"] for r in body["replies"]] == ["again"]


def test_send_with_wait_says_so_when_no_reply_comes_in_time(cli: Cli, person: str) -> None:
    thread_id = resolve(cli, person, "role:slow")
    waited = cli("thread", "send", thread_id, "--as", person, "--wait", "1", "hello?")
    assert waited.returncode == 1
    assert waited.stderr.strip() == "rolecall: no reply within 1s (the message is posted)"
    assert [row[3:] for row in rows(waited.stdout)] == [["message", person, "hello?"]]


def test_run_token_mints_a_token_the_tools_accept(cli: Cli, gateway: Gateway, person: str) -> None:
    _, run = converse(cli, person)
    minted = cli("run", "token", run["id"])
    assert minted.returncode == 0, minted.stderr
    token = minted.stdout.strip()
    assert token.startswith("rct_") and len(minted.stdout.splitlines()) == 1
    request = urllib.request.Request(
        gateway.url + "/api/v1/tools/recall",
        data=b"{}",
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert json.loads(answer.read())["result"] == {"entries": []}
    assert cli("run", "token", "nope").error_line.startswith("rolecall: run_not_found: ")


def test_run_list_by_task_shows_the_assignees_task_run(cli: Cli, gateway: Gateway) -> None:
    request = urllib.request.Request(
        gateway.url + "/api/v1/tasks",
        data=json.dumps({"author": "person:x", "title": "Tidy", "assignee": "echo"}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        task_id = json.loads(answer.read())["id"]

    runs = wait_for(
        "the task run", lambda: cli("run", "list", "--task", task_id, "--json").json()["runs"]
    )
    assert [(r["kind"], r["role"], r["task_id"]) for r in runs] == [("task", "echo", task_id)]
    assert rows(cli("run", "list", "--task", task_id).stdout)[0][1] == "echo"
    assert cli("run", "list", "--task", task_id, "--limit", "1").returncode == 2
