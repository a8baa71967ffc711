"""`rolecall token …` and `rolecall audit` against a running gateway: a token made from the
command line (printed once, alone) acts under its name, is listed without the token, is revoked
and refused from then on; the audit trail shows who did what, filtered and paged; and one clear
line for each failure.

One gateway serves the whole module; each test makes tokens of its own (unique names).
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.cli.conftest import Cli


def rows(table: str) -> list[list[str]]:
    """A table's body rows, split on the two-space column gaps (the header dropped)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.strip().splitlines()[1:]]


@pytest.fixture
def name() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def test_a_token_is_printed_once_acts_under_its_name_and_is_listed_without_it(
    cli: Cli, name: str
) -> None:
    made = cli("token", "create", name)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert re.fullmatch(r"rco_[A-Za-z0-9_-]{43}", token) and made.stdout == token + "\n"

    acted = cli("person", "create", "Tess", "--slug", name, ROLECALL_API_TOKEN=token)
    assert acted.returncode == 0, acted.stderr

    listed = cli("token", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:4] == ["NAME", "CREATED", "LAST_USED", "REVOKED"]
    mine = [row for row in rows(listed.stdout) if row[0] == name]
    assert len(mine) == 1 and mine[0][2] != "-" and mine[0][3] == "-"  # used, not revoked
    assert rows(listed.stdout)[0][0].split(" ") == ["default", "(configured)"]
    assert token not in listed.stdout
    assert token not in cli("token", "list", "--json").stdout

    trail = cli("audit", "--actor", name)
    assert trail.returncode == 0, trail.stderr
    [record] = rows(trail.stdout)
    assert record[2:5] == [name, "127.0.0.1", "person.create"]
    assert f'"slug":"{name}"' in record[5]


def test_a_revoked_token_is_refused_in_one_line(cli: Cli, name: str) -> None:
    token = cli("token", "create", name).stdout.strip()
    revoked = cli("token", "revoke", name)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.startswith(f"revoked {name} at ")

    refused = cli("role", "list", ROLECALL_API_TOKEN=token)
    assert refused.returncode == 1
    line = refused.error_line
    assert line.startswith("rolecall: token_revoked: ") and "ROLECALL_API_TOKEN" in line

    again = cli("token", "revoke", name)
    assert again.returncode == 1 and again.error_line.startswith("rolecall: token_revoked: ")
    assert cli("token", "create", name).error_line.startswith("rolecall: token_exists: ")
    records = cli("audit", "--action", "token.revoke", "--json").json()["records"]
    assert {"name": name} in [r["detail"] for r in records]


def test_the_trail_is_read_newest_first_page_by_page_and_forward(cli: Cli, name: str) -> None:
    for n in range(3):
        assert cli("token", "create", f"{name}-{n}").returncode == 0
    newest = cli("audit", "--limit", "2")
    assert newest.returncode == 0, newest.stderr
    lines = newest.stdout.strip().splitlines()
    assert lines[0].split()[:5] == ["POSITION", "AT", "ACTOR", "CLIENT", "ACTION"]
    body = rows("\n".join(lines[:-1]))
    assert [row[5] for row in body] == [f'{{"name":"{name}-1"}}', f'{{"name":"{name}-2"}}']
    first = int(body[0][0])
    assert lines[-1] == f"(more: --before {first})"

    back = cli("audit", "--before", str(first), "--limit", "1", "--json").json()
    assert [r["detail"] for r in back["records"]] == [{"name": f"{name}-0"}]
    zero = back["records"][0]["position"]
    forward = cli("audit", "--after", str(zero - 1), "--limit", "1").stdout.strip().splitlines()
    assert [row[5] for row in rows("\n".join(forward[:-1]))] == [f'{{"name":"{name}-0"}}']
    assert forward[-1] == f"(more: --after {zero})"
    assert cli("audit", "--actor", "nobody-at-all").stdout == "(no audit records)\n"


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (("token", "create", "Not A Name"), "rolecall: invalid_token_name: "),
        (("token", "revoke", "nobody-at-all"), "rolecall: token_not_found: "),
        (("audit", "--action", "token.explode"), "rolecall: invalid_action: "),
    ],
)
def test_each_failure_is_one_line(cli: Cli, args: tuple[str, ...], start: str) -> None:
    failed = cli(*args)
    assert failed.returncode == 1
    assert failed.error_line.startswith(start), failed.error_line
