"""The people rules as pure functions: identities, slugs, link codes, and the merge plan."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest

from core.model.errors import Conflict, InvalidInput, NotFound, TooLarge
from core.model.participants import MAX_NAME_LENGTH, Address, ParticipantSet, parse_address
from core.model.people import (
    LINK_CODE_ALPHABET,
    Channel,
    Person,
    check_can_link_to,
    check_display_name,
    check_email,
    check_identity_movable,
    check_reactivation,
    check_redeemable,
    check_ttl,
    derive_slug,
    link_code_digest,
    new_link_code,
    normalize_link_code,
    parse_identity,
    parse_slug,
    plan_merge,
    slug_candidates,
)
from core.model.timeline import ThreadId

AT = datetime(2026, 12, 1, tzinfo=UTC)
A, B, C = parse_address("person:a"), parse_address("person:b"), parse_address("person:c")
ROLE, OPS = parse_address("role:concierge"), parse_address("role:ops")


def _person(slug: str = "ann", *, active: bool = True, merged_into: str | None = None) -> Person:
    return Person(slug=slug, display_name=slug.title(), email=None, active=active,
                  created_at=AT, merged_into=merged_into)  # fmt: skip


# --- identities ---------------------------------------------------------------------------------


def test_an_identity_lower_cases_channel_and_scope_and_keeps_the_user_id_as_given() -> None:
    identity = parse_identity("  WEB:Example.COM:User-42 ")
    assert identity.channel is Channel.WEB
    assert identity.scope == "example.com"
    assert identity.user == "User-42"
    assert str(identity) == "web:example.com:User-42"
    slack = parse_identity("Slack:T0123ABC:U0456DEF")
    assert str(slack) == "slack:t0123abc:U0456DEF"


def test_a_user_id_may_hold_colons_and_symbols() -> None:
    assert parse_identity("web:acme:auth0|abc:def").user == "auth0|abc:def"


@pytest.mark.parametrize(
    "raw",
    [
        "email:acme:x",  # unknown channel
        "web",
        "web:acme",  # no user part
        "web:acme:",  # empty user id
        "web::42",  # empty site
        "web:-acme:42",  # site must start with a letter or digit
        "web:ac me:42",
        "web:acme:has space",
        "web:acme:tab\there",
        "web:acme:nul\x00",
        "web:acme:zero\u200bwidth",
        "web:acme:" + "x" * 201,
        "web:" + "s" * 65 + ":42",
        42,
        None,
    ],
)
def test_bad_identities_are_refused_with_a_clear_error(raw: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_identity(raw)
    assert caught.value.code == "invalid_identity"
    assert caught.value.message


def test_the_longest_user_id_is_accepted() -> None:
    assert len(parse_identity("web:acme:" + "x" * 200).user) == 200


# --- persons and slugs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Alice", "alice"),
        ("Ana María Núñez", "ana-maria-nunez"),
        ("  J. R. R. Tolkien!  ", "j-r-r-tolkien"),
        ("O'Brien_Smith", "o-brien-smith"),
        ("李小龙", "person"),
        ("---", "person"),
        ("x" * 100, "x" * 48),
    ],
)
def test_a_slug_is_derived_from_a_display_name(name: str, slug: str) -> None:
    derived = derive_slug(name)
    assert derived == slug
    assert parse_address(f"person:{derived}") == f"person:{derived}"


def test_slug_candidates_add_a_number_and_stay_within_the_limit() -> None:
    assert list(itertools.islice(slug_candidates("alice"), 3)) == ["alice", "alice-2", "alice-3"]
    long = "a" * 60 + "-bcd"
    for candidate in itertools.islice(slug_candidates(long), 12):
        assert len(candidate) <= MAX_NAME_LENGTH
        parse_address(f"person:{candidate}")
    assert list(itertools.islice(slug_candidates(long), 12))[-1].endswith("-12")


def test_a_slug_is_taken_bare_or_as_an_address_and_checked() -> None:
    assert parse_slug(" Person:Alice ") == "alice"
    assert parse_slug("bob.smith_2") == "bob.smith_2"
    for bad in ("", "-x", "a b", "x/y", "a" * 65, 7):
        with pytest.raises(InvalidInput) as caught:
            parse_slug(bad)
        assert caught.value.code == "invalid_slug"


def test_display_names_and_emails_are_checked() -> None:
    assert check_display_name("  Ann Lee ") == "Ann Lee"
    for bad in ("", "   ", None, 3, "bell\x07"):
        with pytest.raises(InvalidInput):
            check_display_name(bad)
    with pytest.raises(TooLarge):
        check_display_name("x" * 201)
    assert check_email(None) is None
    assert check_email(" ann@example.com ") == "ann@example.com"
    for bad in ("ann", "ann@example", "a b@example.com", 5):
        with pytest.raises(InvalidInput):
            check_email(bad)


def test_a_person_reads_as_active_deactivated_or_merged() -> None:
    assert _person().state == "active"
    assert _person(active=False).state == "deactivated"
    merged = _person(active=False, merged_into="bob")
    assert merged.state == "merged"
    assert merged.to_json()["merged_into"] == "bob"
    assert merged.to_json()["address"] == "person:ann"


def test_only_an_active_unmerged_person_gets_identities_and_codes() -> None:
    check_can_link_to(_person())
    with pytest.raises(Conflict) as caught:
        check_can_link_to(_person(active=False))
    assert caught.value.code == "person_deactivated"
    with pytest.raises(Conflict) as caught:
        check_can_link_to(_person(active=False, merged_into="bob"))
    assert caught.value.code == "person_merged"
    check_reactivation(_person(active=False))
    with pytest.raises(Conflict):
        check_reactivation(_person(active=False, merged_into="bob"))


def test_a_deactivated_persons_identity_is_not_moved_by_a_code() -> None:
    check_identity_movable(_person("a"), _person("b"))
    check_identity_movable(_person("b", active=False), _person("b", active=False))
    with pytest.raises(Conflict) as caught:
        check_identity_movable(_person("a", active=False), _person("b"))
    assert caught.value.code == "person_deactivated"


# --- link codes ---------------------------------------------------------------------------------


def test_a_link_code_is_eight_unambiguous_characters_shown_in_two_groups() -> None:
    codes = {new_link_code() for _ in range(200)}
    assert len(codes) == 200
    for code in codes:
        assert re.fullmatch(r"[0-9A-Z]{4}-[0-9A-Z]{4}", code)
        assert not set(code) & set("ILOU")
        assert normalize_link_code(code) == code.replace("-", "")


def test_reading_a_code_forgives_case_spaces_hyphens_and_look_alikes() -> None:
    assert normalize_link_code(" k7qm 3xpa ") == "K7QM3XPA"
    assert normalize_link_code("OIL0-1234") == "0110" + "1234"
    assert link_code_digest("k7qm-3xpa") == link_code_digest("K7QM3XPA")
    assert len(link_code_digest("K7QM3XPA")) == 64
    assert set(LINK_CODE_ALPHABET) == set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


@pytest.mark.parametrize("raw", ["", "K7QM3XP", "K7QM3XPAB", "K7QM-3XP!", "K7QM3XPU", None, 12])
def test_malformed_codes_are_invalid_input(raw: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        normalize_link_code(raw)
    assert caught.value.code == "invalid_link_code"


def test_a_code_is_good_once_until_it_expires() -> None:
    expires = AT + timedelta(minutes=15)
    check_redeemable(expires_at=expires, used_at=None, now=AT)
    with pytest.raises(NotFound) as caught:
        check_redeemable(expires_at=expires, used_at=None, now=expires)
    assert caught.value.code == "link_code_expired"
    with pytest.raises(NotFound) as caught:
        check_redeemable(expires_at=expires, used_at=AT, now=AT)
    assert caught.value.code == "link_code_used"


def test_a_codes_lifetime_is_bounded() -> None:
    assert check_ttl(None) == timedelta(minutes=15)
    assert check_ttl(60) == timedelta(minutes=1)
    for bad in (0, -1, 7 * 86_400 + 1, 1.5, "60", True):
        with pytest.raises(InvalidInput) as caught:
            check_ttl(bad)
        assert caught.value.code == "invalid_ttl"


# --- the merge plan -----------------------------------------------------------------------------


def _key(*members: Address) -> str:
    return ParticipantSet.of(members).key


def test_a_thread_without_a_counterpart_is_renamed_to_the_new_person() -> None:
    plan = plan_merge(A, B, {ThreadId("t1"): (A, ROLE)}, existing={})
    assert plan.renames == {ThreadId("t1"): ParticipantSet.of([B, ROLE])}
    assert plan.predecessors == {} and list(plan.untouched) == []


def test_a_thread_whose_counterpart_exists_becomes_its_predecessor() -> None:
    plan = plan_merge(
        A,
        B,
        {ThreadId("t1"): (A, ROLE), ThreadId("t2"): (A, C, OPS)},
        existing={_key(B, ROLE): ThreadId("tb")},
    )
    assert plan.predecessors == {ThreadId("tb"): ThreadId("t1")}
    assert plan.renames == {ThreadId("t2"): ParticipantSet.of([B, C, OPS])}


def test_a_thread_the_new_person_is_in_already_is_left_alone() -> None:
    plan = plan_merge(A, B, {ThreadId("t1"): (A, B), ThreadId("t2"): (A, B, ROLE)}, existing={})
    assert sorted(plan.untouched) == ["t1", "t2"]
    assert plan.renames == {} and plan.predecessors == {}
