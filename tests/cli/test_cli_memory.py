"""`rolecall memory …` against a running gateway: an operator lists a role's memory (table,
`--json`, paging), redacts an entry, after which the agent tools no longer recall it, and gets
one clear line for each failure.

One gateway serves the module with the built-in `echo` role; entries are stored as an agent
stores them, through the tools with a run token. Each test uses a person (a thread) of its own.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Cli, Gateway
from tests.cli.test_cli_runs import converse, fields, rows


@pytest.fixture(scope="module")
def gateway_settings(echo_roles_dir: Path) -> dict[str, str]:
    return {"ROLECALL_ROLES_DIR": str(echo_roles_dir)}


@pytest.fixture
def person() -> str:
    return f"person:m-{uuid.uuid4().hex[:8]}"


def _tool(gateway: Gateway, token: str, name: str, arguments: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{gateway.url}/api/v1/tools/{name}",
        data=json.dumps(arguments).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())["result"]


def _agent(cli: Cli, gateway: Gateway, person: str) -> tuple[str, str]:
    """A conversation of `person` with echo, and a run token for its tools."""
    thread_id, run = converse(cli, person)
    minted = cli("run", "token", run["id"])
    assert minted.returncode == 0, minted.stderr
    return thread_id, minted.stdout.strip()


def test_an_operator_lists_and_redacts_an_entry_the_tools_then_never_recall(
    cli: Cli, gateway: Gateway, person: str
) -> None:
    thread_id, token = _agent(cli, gateway, person)
    bad = _tool(gateway, token, "store", {"payload": {"kind": "note", "text": "wrong door"}})["id"]
    good = _tool(gateway, token, "store", {"payload": {"kind": "note", "text": "blue door"}})["id"]

    listed = cli("memory", "list", "echo", "--thread", thread_id)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:5] == ["ENTRY", "AT", "THREAD", "STATE", "PAYLOAD"]
    table = rows(listed.stdout)
    assert [(r[0], r[2], r[3]) for r in table] == [
        (bad, thread_id, "thread only"),
        (good, thread_id, "thread only"),
    ]
    assert table[0][4] == '{"kind": "note", "text": "wrong door"}'
    as_json = cli("memory", "list", "role:echo", "--thread", thread_id, "--json").json()
    assert [e["id"] for e in as_json["entries"]] == [bad, good] and as_json["next"] is None

    redacted = cli("memory", "redact", "echo", bad, "--reason", "it is the red door")
    assert redacted.returncode == 0, redacted.stderr
    about = fields(redacted.stdout)
    assert about["entry"] == f"{bad}  (redacted)"
    assert (about["by"], about["reason"], about["thread"]) == (
        "operator",
        "it is the red door",
        thread_id,
    )

    after = rows(cli("memory", "list", "echo", "--thread", thread_id).stdout)
    assert [(r[0], r[3]) for r in after] == [(bad, "redacted"), (good, "thread only")]
    for arguments in ({}, {"query": "door"}, {"where": {"kind": "note"}}):
        found = _tool(gateway, token, "recall", arguments)["entries"]
        assert [e["id"] for e in found] == [good]

    again = cli("memory", "redact", "echo", bad)
    assert again.error_line.startswith("rolecall: already_redacted: ")


def test_memory_list_pages_and_says_when_there_is_nothing(
    cli: Cli, gateway: Gateway, person: str
) -> None:
    thread_id, token = _agent(cli, gateway, person)
    ids = [_tool(gateway, token, "store", {"payload": {"n": n}})["id"] for n in range(2)]

    first = cli("memory", "list", "echo", "--thread", thread_id, "--limit", "1")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert rows("\n".join(lines[:-1]))[0][0] == ids[0]
    assert lines[-1] == f"(more: --after {ids[0]})"
    rest = cli("memory", "list", "echo", "--thread", thread_id, "--after", ids[0], "--json")
    assert [e["id"] for e in rest.json()["entries"]] == [ids[1]]

    other_thread, _ = converse(cli, f"{person}-quiet")
    empty = cli("memory", "list", "echo", "--thread", other_thread)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout == "(no memory for role:echo)\n"


def test_memory_commands_fail_with_one_line(cli: Cli, gateway: Gateway, person: str) -> None:
    _, token = _agent(cli, gateway, person)
    entry = _tool(gateway, token, "store", {"payload": {"text": "x"}})["id"]

    unknown_role = cli("memory", "list", "nobody")
    assert unknown_role.error_line.startswith("rolecall: role_not_found: ")
    unknown_entry = cli("memory", "redact", "echo", "0" * 32)
    assert unknown_entry.error_line.startswith("rolecall: memory_entry_not_found: ")
    bad_after = cli("memory", "list", "echo", "--after", "nope")
    assert bad_after.error_line.startswith("rolecall: invalid_parameter: ")
    too_long = cli("memory", "redact", "echo", entry, "--reason", "x" * 1001)
    assert too_long.error_line.startswith("rolecall: reason_too_long: ")
    usage = cli("memory", "list", "echo", "--limit", "0")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    no_token = cli("memory", "list", "echo", ROLECALL_API_TOKEN="wrong-token")
    assert no_token.error_line.startswith("rolecall: ")
    assert no_token.returncode == 1
