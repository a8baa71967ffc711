"""`rolecall person …` against a running gateway: each command, its table and its `--json`, a
link code redeemed from the command line, and one clear line for each failure.

One gateway serves the whole module; each test makes people of its own (unique slugs).
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.cli.conftest import Cli


def rows(table: str) -> list[list[str]]:
    """A table's body rows, split on the two-space column gaps (the header dropped)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.strip().splitlines()[1:]]


def fields(table: str) -> dict[str, str]:
    """A `name  value` table as a dict."""
    return dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in table.splitlines())


@pytest.fixture
def slug() -> str:
    return f"p-{uuid.uuid4().hex[:10]}"


def test_create_show_and_list(cli: Cli, slug: str) -> None:
    created = cli("person", "create", "Ann Lee", "--slug", slug, "--email", "ann@example.com")
    assert created.returncode == 0, created.stderr
    head, identities = created.stdout.split("\n\n")
    about = fields(head)
    assert about["person"] == f"person:{slug}  (created)"
    assert (about["display_name"], about["email"], about["state"]) == (
        "Ann Lee",
        "ann@example.com",
        "active",
    )
    assert identities == "(no identities)\n"

    derived = cli("person", "create", "Zoë Ünal", "--json").json()
    assert derived["slug"].startswith("zoe-unal") and derived["email"] is None

    shown = cli("person", "show", f"person:{slug}", "--json").json()
    assert (shown["slug"], shown["identities"]) == (slug, [])

    listed = cli("person", "list", "--limit", "500")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:4] == ["SLUG", "DISPLAY_NAME", "EMAIL", "STATE"]
    assert [slug, "Ann Lee", "ann@example.com", "active"] in rows(listed.stdout)


def test_list_pages_with_after_and_limit(cli: Cli, slug: str) -> None:
    for n in range(3):
        assert cli("person", "create", f"P{n}", "--slug", f"{slug}-{n}").returncode == 0
    first = cli("person", "list", "--limit", "1")
    assert first.returncode == 0, first.stderr
    more = re.search(r"^\(more: --after (\S+)\)$", first.stdout, re.M)
    assert more is not None
    after = cli("person", "list", "--after", more[1], "--json").json()
    assert more[1] not in [p["slug"] for p in after["persons"]]
    assert {f"{slug}-{n}" for n in range(3)} <= {p["slug"] for p in after["persons"]} | {more[1]}


def test_identities_link_codes_and_a_merge(cli: Cli, slug: str) -> None:
    a, b = f"{slug}-a", f"{slug}-b"
    web = f"web:example.com:{slug}"
    assert cli("person", "create", "A", "--slug", a).returncode == 0
    assert cli("person", "create", "B", "--slug", b).returncode == 0
    added = cli("person", "identity-add", a, web)
    assert added.returncode == 0, added.stderr
    assert rows(added.stdout.split("\n\n")[1])[0][0] == web

    code_line = cli("person", "link-code", b, "--ttl", "120")
    assert code_line.returncode == 0, code_line.stderr
    match = re.fullmatch(r"([0-9A-Z]{4}-[0-9A-Z]{4})  \(expires \S+Z\)\n", code_line.stdout)
    assert match is not None, code_line.stdout

    redeemed = cli("person", "redeem", match[1], web)
    assert redeemed.returncode == 0, redeemed.stderr
    assert fields(redeemed.stdout.split("\n\n")[0])["person"] == f"person:{b}  (now has {web})"
    merged = cli("person", "show", a)
    assert fields(merged.stdout.split("\n\n")[0])["state"] == f"merged into {b}"

    again = cli("person", "redeem", match[1], "web:example.com:other")
    assert again.error_line.startswith("rolecall: link_code_used: ")
    assert again.returncode == 1


def test_deactivate_and_activate(cli: Cli, slug: str) -> None:
    assert cli("person", "create", "Ann", "--slug", slug).returncode == 0
    off = cli("person", "deactivate", slug)
    assert off.returncode == 0, off.stderr
    assert fields(off.stdout.split("\n\n")[0])["state"] == "deactivated"
    refused = cli("person", "link-code", slug)
    assert refused.error_line.startswith("rolecall: person_deactivated: ")
    on = cli("person", "activate", slug, "--json").json()
    assert on["state"] == "active"


def test_failures_are_one_line(cli: Cli, slug: str) -> None:
    missing = cli("person", "show", "nobody-here")
    assert missing.error_line == "rolecall: person_not_found: no person with slug 'nobody-here'"
    assert missing.returncode == 1
    assert cli("person", "create", "Ann", "--slug", slug).returncode == 0
    twice = cli("person", "create", "Ann", "--slug", slug)
    assert twice.error_line.startswith("rolecall: person_exists: ")
    bad = cli("person", "identity-add", slug, "web:example.com:has space")
    assert bad.error_line.startswith("rolecall: invalid_identity: identity: ")
    unknown = cli("person", "redeem", "ZZZZ-ZZZZ", "web:example.com:x")
    assert unknown.error_line.startswith("rolecall: link_code_unknown: ")
    usage = cli("person", "link-code", slug, "--ttl", "0")
    assert usage.returncode == 2 and "must be at least 1" in usage.stderr


def test_erase_lists_what_goes_and_asks_before_it_erases(cli: Cli, slug: str) -> None:
    made = cli("person", "create", "Ann", "--slug", slug, "--email", "a@example.com")
    assert made.returncode == 0, made.stderr
    assert cli("person", "identity-add", slug, f"web:example.com:{slug}").returncode == 0
    thread = cli("thread", "resolve", f"person:{slug}", f"person:{slug}-friend", "--json").json()
    said = cli("thread", "send", thread["id"], "--as", f"person:{slug}", "my locker is 42")
    assert said.returncode == 0, said.stderr

    unconfirmed = cli("person", "erase", slug)  # no terminal to ask in, no --yes: nothing goes
    assert unconfirmed.returncode == 1
    assert unconfirmed.stdout.startswith(f"Erasing person:{slug} removes, for good: ")
    assert "1 thread, 1 message, " in unconfirmed.stdout and "1 identity" in unconfirmed.stdout
    assert unconfirmed.stderr.strip() == (
        f"rolecall: not erased: confirm with --yes (or run it in a terminal) to erase person:{slug}"
    )
    assert cli("person", "show", slug, "--json").json()["state"] == "active"

    erased = cli("person", "erase", slug, "--yes")
    assert erased.returncode == 0, erased.stderr
    first, second = erased.stdout.splitlines()
    assert first.startswith(f"Erasing person:{slug} removes, for good: ")
    assert second.startswith(f"person:{slug} erased: ") and "1 identity" in second
    shown = cli("person", "show", slug, "--json").json()
    assert (shown["state"], shown["email"], shown["identities"]) == ("erased", None, [])
    again = cli("person", "activate", slug)
    assert again.error_line == f"rolecall: person_erased: person:{slug} was erased"
    timeline = cli("thread", "timeline", thread["id"], "--json").json()
    [message] = [e for e in timeline["events"] if e["kind"] == "message"]
    assert (message["text"], message["erased"]) == ("", True)
