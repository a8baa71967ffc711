"""`rolecall approval …` against a running gateway: an operator lists a thread's approvals (table,
`--all`, `--as`, `--json`), reads one, answers one as a person — the first answer wins and a second
is one line naming who answered what — and gets one clear line for each refusal.

Approvals are asked as a role's run asks them, through storage: the test opens the gateway's own
SQLite file beside it (no operator route asks). The role `ops` is not served, so nothing but the
people answers in its conversations. Each test uses people of its own, hence threads of its own.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from core.model.participants import Address
from core.model.timeline import ThreadId
from core.storage import open_database
from tests.approvals import restart_request
from tests.cli.conftest import Cli, Gateway
from tests.cli.test_cli_runs import fields, resolve, rows

OPS = "role:ops"
RUN = "0" * 31 + "7"


@pytest.fixture
def people() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"person:a-{tag}", f"person:b-{tag}"


def ask(gateway: Gateway, thread_id: str, title: str, *, approvers: tuple[str, ...] = ()) -> str:
    """`ops` asks in the thread, as its run would: written to the gateway's database; the id."""

    async def request() -> str:
        db = await open_database(f"sqlite+aiosqlite:///{gateway.var_dir / 'rolecall.db'}")
        try:
            event = await db.approvals.request(
                ThreadId(thread_id),
                RUN,
                Address(OPS),
                restart_request(title=title, approvers=approvers),
            )
        finally:
            await db.close()
        return str(event.id)

    return asyncio.run(request())


def test_an_operator_lists_reads_and_answers_approvals(
    cli: Cli, gateway: Gateway, people: tuple[str, str]
) -> None:
    ann, bob = people
    thread_id = resolve(cli, ann, bob, OPS)
    none = cli("approval", "list", thread_id)
    assert none.returncode == 0, none.stderr
    assert none.stdout == "(no pending approvals)\n"
    first = ask(gateway, thread_id, "Restart the web service?")
    second = ask(gateway, thread_id, "Drop the cache?", approvers=(ann,))

    listed = cli("approval", "list", thread_id)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:6] == [
        "APPROVAL",
        "STATE",
        "EXPIRES_AT",
        "OPTIONS",
        "ANSWER",
        "TITLE",
    ]
    table = rows(listed.stdout)
    assert [(r[0], r[1], r[3], r[4], r[5]) for r in table] == [
        (first, "pending", "allow/reject", "-", "Restart the web service?"),
        (second, "pending", "allow/reject", "-", "Drop the cache?"),
    ]

    shown = cli("approval", "show", second)
    assert shown.returncode == 0, shown.stderr
    about = fields(shown.stdout.split("\n\n")[0])
    assert (about["approval"], about["thread"], about["role"], about["state"]) == (
        second,
        thread_id,
        OPS,
        "pending",
    )
    assert about["options"] == "allow: Allow once (allow_once); reject: Reject (reject_once)"
    assert about["tool"] == 'execute {"command": "systemctl restart web"}'
    assert about["approvers"] == ann
    assert shown.stdout.rstrip().endswith("It is answering 502s.")
    assert fields(cli("approval", "show", first).stdout.split("\n\n")[0])["approvers"] == (
        "the active people"
    )

    answered = cli("approval", "answer", first, "reject", "--as", bob)
    assert answered.returncode == 0, answered.stderr
    after = fields(answered.stdout.split("\n\n")[0])
    assert (after["state"], after["answer"], after["by"]) == (
        "answered",
        "reject: Reject (reject_once)",
        f"{bob} (api)",
    )
    assert [r[0] for r in rows(cli("approval", "list", thread_id).stdout)] == [second]
    every = rows(cli("approval", "list", thread_id, "--all").stdout)
    assert [(r[0], r[1], r[4]) for r in every] == [
        (first, "answered", f"reject by {bob}"),
        (second, "pending", "-"),
    ]


def test_a_second_answer_is_one_line_naming_who_answered_what(
    cli: Cli, gateway: Gateway, people: tuple[str, str]
) -> None:
    ann, bob = people
    thread_id = resolve(cli, ann, bob, OPS)
    approval = ask(gateway, thread_id, "Restart?")
    assert cli("approval", "answer", approval, "allow", "--as", ann).returncode == 0
    again = cli("approval", "answer", approval, "reject", "--as", bob)
    assert again.returncode == 1
    assert again.error_line == (
        f"rolecall: approval_closed: this approval was already answered 'Allow once' by {ann} (api)"
    )


def test_json_is_the_gateways_answer_as_it_came(
    cli: Cli, gateway: Gateway, people: tuple[str, str]
) -> None:
    ann, bob = people
    thread_id = resolve(cli, ann, bob, OPS)
    approval = ask(gateway, thread_id, "Restart?")
    listed = cli("approval", "list", thread_id, "--json").json()
    assert [a["id"] for a in listed["approvals"]] == [approval]
    shown = cli("approval", "show", approval, "--json").json()
    assert shown == listed["approvals"][0] and shown["resolution"] is None
    answered = cli("approval", "answer", approval, "allow", "--as", ann, "--json").json()
    assert answered["state"] == "answered"
    assert (answered["resolution"]["by"], answered["resolution"]["channel"]) == (ann, "api")
    assert cli("approval", "list", thread_id, "--all", "--json").json() == {"approvals": [answered]}


def test_as_lists_only_what_that_participant_may_see(
    cli: Cli, gateway: Gateway, people: tuple[str, str]
) -> None:
    ann, bob = people
    thread_id = resolve(cli, ann, bob, OPS)
    before = ask(gateway, thread_id, "Before?")
    assert cli("thread", "remove", thread_id, bob).returncode == 0
    away = ask(gateway, thread_id, "While Bob was away?")
    assert cli("thread", "readd", thread_id, bob).returncode == 0

    as_bob = rows(cli("approval", "list", thread_id, "--as", bob).stdout)
    assert [r[0] for r in as_bob] == [before]
    as_ann = rows(cli("approval", "list", thread_id, "--as", ann, "--all").stdout)
    assert [r[0] for r in as_ann] == [before, away]
    stranger = cli("approval", "list", thread_id, "--as", "person:nobody-here")
    assert stranger.returncode == 1
    assert stranger.error_line.startswith("rolecall: not_a_member: ")


def test_each_refusal_is_one_line_and_exit_1(
    cli: Cli, gateway: Gateway, people: tuple[str, str]
) -> None:
    ann, bob = people
    thread_id = resolve(cli, ann, bob, OPS)
    approval = ask(gateway, thread_id, "Restart?", approvers=(ann,))

    not_listed = cli("approval", "answer", approval, "allow", "--as", bob)
    assert not_listed.error_line.startswith("rolecall: not_an_approver: ")
    unknown = cli("approval", "answer", approval, "maybe", "--as", ann)
    assert unknown.error_line == (
        "rolecall: unknown_option: no option 'maybe'; the options are allow, reject"
    )
    assert cli("thread", "remove", thread_id, ann).returncode == 0
    removed = cli("approval", "answer", approval, "allow", "--as", ann)
    assert removed.error_line.startswith("rolecall: participant_removed: ")
    absent = "0" * 32
    for command in (["show", absent], ["answer", absent, "allow", "--as", ann]):
        missing = cli("approval", *command)
        assert missing.returncode == 1
        assert missing.error_line == f"rolecall: approval_not_found: no approval with id '{absent}'"
    bad = cli("approval", "answer", approval, "allow", "--as", "ann")
    assert bad.error_line.startswith("rolecall: invalid_address: as: ")
    no_thread = cli("approval", "list", absent)
    assert no_thread.error_line.startswith("rolecall: thread_not_found: ")
    assert fields(cli("approval", "show", approval).stdout.split("\n\n")[0])["state"] == "pending"


def test_answer_needs_the_person_answering(cli: Cli) -> None:
    without = cli("approval", "answer", "0" * 32, "allow")
    assert without.returncode == 2
    assert "the following arguments are required: --as" in without.stderr
    assert without.stdout == ""
