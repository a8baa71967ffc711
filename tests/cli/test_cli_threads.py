"""`rolecall thread …` against a running gateway: each command, its table and its `--json`.

One gateway serves the whole module; each test uses participants of its own so that tests do not
see each other's threads.
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.cli.conftest import Cli, Gateway
from tests.cli.test_cli_banner import banner_rows


@pytest.fixture
def people() -> tuple[str, str, str]:
    """alice, bob and a role, unique to the test."""
    tag = uuid.uuid4().hex[:8]
    return f"person:alice-{tag}", f"person:bob-{tag}", f"role:support-{tag}"


def rows(table: str) -> list[list[str]]:
    """A table's body rows, split on the two-space column gaps (the header dropped)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.strip().splitlines()[1:]]


def resolve(cli: Cli, *participants: str) -> str:
    return str(cli("thread", "resolve", *participants, "--json").json()["id"])


def send(cli: Cli, thread_id: str, author: str, text: str) -> str:
    return str(cli("thread", "send", thread_id, "--as", author, text, "--json").json()["id"])


def test_serve_with_the_token_in_the_environment_names_the_setting_and_writes_no_file(
    gateway: Gateway,
) -> None:
    assert gateway.stdout.splitlines()[0] == f"Rolecall listening on {gateway.url} (role:concierge)"
    assert banner_rows(gateway.stdout)["operator token"] == ["ROLECALL_API_TOKEN"]
    assert not (gateway.var_dir / "api-token").exists()


def test_resolve_creates_the_thread_then_finds_the_same_one(
    cli: Cli, people: tuple[str, str, str]
) -> None:
    alice, _, role = people

    created = cli("thread", "resolve", alice, role)
    assert created.returncode == 0, created.stderr
    assert "(created)" in created.stdout
    thread_id = re.search(r"^thread\s+(\S+)\s+\(created\)$", created.stdout, re.M)
    assert thread_id is not None, created.stdout

    # Any order, duplicates and case: the same set, hence the same thread.
    again = cli("thread", "resolve", role, alice.upper(), alice)
    assert again.returncode == 0, again.stderr
    assert f"{thread_id[1]}  (already existed)" in again.stdout
    assert "PARTICIPANT" in again.stdout
    assert [alice, "active"] in rows(again.stdout.split("\n\n")[1])

    as_json = cli("thread", "resolve", alice, role, "--json").json()
    assert as_json["id"] == thread_id[1]
    assert as_json["participants"] == [
        {"address": alice, "state": "active"},
        {"address": role, "state": "active"},
    ]
    assert as_json["memory_policy"] == {"thread_only": True}


def test_a_conversation_with_a_removal_and_a_readd(cli: Cli, people: tuple[str, str, str]) -> None:
    alice, bob, role = people
    thread_id = resolve(cli, alice, bob, role)

    sent = cli("thread", "send", thread_id, "--as", alice, "before", "the", "removal")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines()[0].split() == ["SEQ", "AT", "ID", "KIND", "WHO", "TEXT"]
    assert rows(sent.stdout)[0][3:] == ["message", alice, "before the removal"]

    removed = cli("thread", "remove", thread_id, bob)
    assert removed.returncode == 0, removed.stderr
    assert rows(removed.stdout)[0][3:] == ["participant_state_changed", bob, "active -> removed"]

    send(cli, thread_id, alice, "during the blackout")
    shown = cli("thread", "show", thread_id)
    assert [bob, "removed"] in rows(shown.stdout.split("\n\n")[1])

    readded = cli("thread", "readd", thread_id, bob, "--json").json()
    assert (readded["kind"], readded["participant"]) == ("participant_state_changed", bob)
    assert (readded["from_state"], readded["to_state"]) == ("removed", "active")
    send(cli, thread_id, alice, "after the readd")

    # bob's view: his own state changes, and nothing from the blackout window.
    as_bob = cli("thread", "timeline", thread_id, "--as", bob)
    assert as_bob.returncode == 0, as_bob.stderr
    assert [row[3:] for row in rows(as_bob.stdout)] == [
        ["message", alice, "before the removal"],
        ["participant_state_changed", bob, "active -> removed"],
        ["participant_state_changed", bob, "removed -> active"],
        ["message", alice, "after the readd"],
    ]
    assert "during the blackout" not in as_bob.stdout

    # The operator's view: everything, in seq order.
    everything = cli("thread", "timeline", thread_id, "--json").json()
    assert [e["seq"] for e in everything["events"]] == [1, 2, 3, 4, 5]
    assert [e.get("text") for e in everything["events"]] == [
        "before the removal",
        None,
        "during the blackout",
        None,
        "after the readd",
    ]
    assert everything["more"] is False
    assert [row[0] for row in rows(cli("thread", "timeline", thread_id).stdout)] == [
        "1",
        "2",
        "3",
        "4",
        "5",
    ]


def test_retract_marks_the_message_and_only_its_author_may(
    cli: Cli, people: tuple[str, str, str]
) -> None:
    alice, bob, role = people
    thread_id = resolve(cli, alice, bob, role)
    message_id = send(cli, thread_id, alice, "a typo-ridden message")

    not_author = cli("thread", "retract", thread_id, message_id, "--as", bob)
    assert not_author.returncode == 1
    assert not_author.error_line.startswith("rolecall: not_the_author: ")

    retracted = cli("thread", "retract", thread_id, message_id, "--as", alice, "--reason", "typo")
    assert retracted.returncode == 0, retracted.stderr
    assert rows(retracted.stdout)[0][3:] == ["retraction", alice, f"retracts {message_id}: typo"]

    timeline = rows(cli("thread", "timeline", thread_id, "--as", bob).stdout)
    assert timeline[0][3:] == ["message", alice, "[retracted] a typo-ridden message"]
    assert timeline[1][3] == "retraction"

    twice = cli("thread", "retract", thread_id, message_id, "--as", alice, "--json")
    assert twice.returncode == 1
    assert twice.error_line.startswith("rolecall: already_retracted: ")

    event = cli("thread", "timeline", thread_id, "--json").json()["events"][0]
    assert (event["id"], event["retracted"]) == (message_id, True)


def test_show_and_list(cli: Cli, people: tuple[str, str, str]) -> None:
    alice, bob, role = people
    with_bob = resolve(cli, alice, bob, role)
    alone = resolve(cli, alice, role)

    shown = cli("thread", "show", alone)
    assert shown.returncode == 0, shown.stderr
    header, participants = shown.stdout.split("\n\n")
    assert [re.split(r"\s{2,}", line) for line in header.splitlines()] == [
        ["thread", alone],
        ["created_at", cli("thread", "show", alone, "--json").json()["created_at"]],
        ["memory", "thread only"],
    ]
    assert rows(participants) == [[alice, "active"], [role, "active"]]

    listed = cli("thread", "list", "--participant", alice)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:3] == ["THREAD", "CREATED_AT", "PARTICIPANTS"]
    assert {row[0] for row in rows(listed.stdout)} == {with_bob, alone}

    only_bob = cli("thread", "list", "--participant", bob, "--json").json()
    assert [t["id"] for t in only_bob["threads"]] == [with_bob]

    nobody = cli("thread", "list", "--participant", f"person:nobody-{uuid.uuid4().hex[:8]}")
    assert nobody.returncode == 0, nobody.stderr
    assert nobody.stdout.startswith("(no threads for person:nobody-")


def test_timeline_pages_forward_and_from_the_end(cli: Cli, people: tuple[str, str, str]) -> None:
    alice, _, role = people
    thread_id = resolve(cli, alice, role)
    for n in range(1, 4):
        send(cli, thread_id, alice, f"message {n}")

    first = cli("thread", "timeline", thread_id, "--limit", "2")
    assert [row[5] for row in rows(first.stdout.rsplit("\n(", 1)[0])] == ["message 1", "message 2"]
    assert first.stdout.splitlines()[-1] == "(more: --after 2)"

    rest = cli("thread", "timeline", thread_id, "--after", "2", "--json").json()
    assert [e["text"] for e in rest["events"]] == ["message 3"]
    assert rest["more"] is False

    newest = cli("thread", "timeline", thread_id, "--latest", "--limit", "1")
    assert [row[5] for row in rows(newest.stdout.rsplit("\n(", 1)[0])] == ["message 3"]
    assert newest.stdout.splitlines()[-1] == "(more: --before 3)"

    empty = cli("thread", "timeline", thread_id, "--after", "3")
    assert empty.stdout.strip() == "(no events)"


def test_send_reads_the_text_from_stdin(cli: Cli, people: tuple[str, str, str]) -> None:
    alice, _, role = people
    thread_id = resolve(cli, alice, role)
    sent = cli("thread", "send", thread_id, "--as", alice, "-", "--json", stdin="two\nlines")
    assert sent.json()["text"] == "two\nlines"
    shown = cli("thread", "timeline", thread_id)
    assert rows(shown.stdout)[0][5] == "two\\nlines"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["thread", "show", "no-such-thread"], "thread_not_found"),
        (["thread", "timeline", "no-such-thread"], "thread_not_found"),
        (["thread", "send", "no-such-thread", "--as", "person:a", "hi"], "thread_not_found"),
        (["thread", "resolve", "person:alice"], None),
        (["thread", "resolve", "alice", "role:support"], "invalid_address"),
        (["thread", "list", "--participant", "nobody"], "invalid_address"),
    ],
)
def test_api_errors_are_one_line_and_exit_1(cli: Cli, args: list[str], code: str | None) -> None:
    failed = cli(*args)
    assert failed.returncode == 1
    line = failed.error_line
    if code is not None:
        assert line.startswith(f"rolecall: {code}: "), line


def test_unknown_thread_names_the_id(cli: Cli) -> None:
    failed = cli("thread", "show", "no-such-thread", "--json")
    assert failed.returncode == 1
    assert failed.error_line == "rolecall: thread_not_found: no thread with id 'no-such-thread'"


def test_posting_as_a_non_member_or_a_removed_member_is_refused(
    cli: Cli, people: tuple[str, str, str]
) -> None:
    alice, bob, role = people
    thread_id = resolve(cli, alice, role)
    outsider = cli("thread", "send", thread_id, "--as", bob, "hello")
    assert outsider.returncode == 1
    assert outsider.error_line.startswith("rolecall: not_a_member: ")

    cli("thread", "remove", thread_id, alice)
    removed = cli("thread", "send", thread_id, "--as", alice, "hello")
    assert removed.error_line.startswith("rolecall: participant_removed: ")

    never_member = cli("thread", "readd", thread_id, bob)
    assert never_member.returncode == 1
    assert never_member.error_line.startswith("rolecall: ")


def test_a_wrong_token_is_refused_with_a_hint(cli: Cli) -> None:
    failed = cli("thread", "list", "--participant", "person:alice", "--token", "x" * 20)
    assert failed.returncode == 1
    line = failed.error_line
    assert line.startswith("rolecall: unauthorized: ")
    assert "--token" in line


@pytest.mark.parametrize(
    "args",
    [
        ["thread"],
        ["thread", "send", "some-id", "hello"],  # no --as
        ["thread", "timeline", "some-id", "--limit", "0"],
        ["thread", "timeline", "some-id", "--after", "x"],
        ["thread", "timeline", "some-id", "--after", "1", "--latest"],
        ["thread", "list"],  # no --participant
        ["thread", "frobnicate"],
    ],
)
def test_usage_errors_exit_2_without_calling_the_gateway(cli: Cli, args: list[str]) -> None:
    failed = cli(*args)
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr
    assert failed.stderr.splitlines()[-1].startswith("rolecall")
