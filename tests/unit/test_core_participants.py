"""Participant addresses and participant sets (core/model/participants.py)."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.errors import InvalidInput
from core.model.participants import (
    MAX_NAME_LENGTH,
    MAX_PARTICIPANTS,
    ParticipantKind,
    ParticipantSet,
    kind_of,
    parse_address,
)

# --- addresses ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "person:alice",
        "role:support",
        "person:a",
        "role:0",
        "person:a.b-c_d",
        "person:7eleven",
        "role:agent-2.0_beta",
        "person:" + "a" * MAX_NAME_LENGTH,
    ],
)
def test_valid_person_and_role_addresses_are_accepted_unchanged(raw: str) -> None:
    assert parse_address(raw) == raw


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("Person:Alice", "person:alice"),
        ("PERSON:ALICE", "person:alice"),
        ("Role:Support", "role:support"),
        ("role:Agent-2.0_Beta", "role:agent-2.0_beta"),
    ],
)
def test_addresses_are_canonicalised_to_lower_case(raw: str, canonical: str) -> None:
    assert parse_address(raw) == canonical


def test_surrounding_whitespace_is_trimmed_before_validation() -> None:
    assert parse_address("  person:alice\n") == "person:alice"


def _assert_invalid_address(raw: object) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        parse_address(raw)
    assert info.value.code == "invalid_address"
    assert info.value.message
    return info.value


@pytest.mark.parametrize("raw", ["alice", "", "person", "personalice", "alice@example.com"])
def test_address_without_a_prefix_is_rejected(raw: str) -> None:
    _assert_invalid_address(raw)


@pytest.mark.parametrize(
    "raw", ["user:alice", "people:alice", "persons:alice", "bot:alice", ":alice", "agent:support"]
)
def test_address_with_a_wrong_prefix_is_rejected(raw: str) -> None:
    error = _assert_invalid_address(raw)
    assert "person:" in error.message and "role:" in error.message


@pytest.mark.parametrize("raw", ["person:", "role:", "Person:"])
def test_address_with_an_empty_name_is_rejected(raw: str) -> None:
    _assert_invalid_address(raw)


@pytest.mark.parametrize(
    "raw", ["person:.alice", "person:-alice", "role:_support", "role:.", "person:-"]
)
def test_name_must_start_with_a_letter_or_digit(raw: str) -> None:
    _assert_invalid_address(raw)


@pytest.mark.parametrize(
    "raw", ["person:al ice", "person: alice", "person :alice", "role:sup\tport", "person:a\nb"]
)
def test_spaces_inside_an_address_are_rejected(raw: str) -> None:
    _assert_invalid_address(raw)


@pytest.mark.parametrize(
    "raw",
    ["person:alice:bob", "person:alice/x", "role:a@b", "person:élodie", "person:a+b", "role:a,b"],
)
def test_characters_outside_the_slug_alphabet_are_rejected(raw: str) -> None:
    _assert_invalid_address(raw)


def test_name_of_64_characters_is_accepted_and_65_rejected() -> None:
    assert parse_address("role:" + "x" * 64) == "role:" + "x" * 64
    _assert_invalid_address("role:" + "x" * 65)
    _assert_invalid_address("person:" + "a" * 200)


@pytest.mark.parametrize("raw", [None, 1, 1.5, b"person:alice", ["person:alice"], {"person": "a"}])
def test_non_string_address_is_rejected_with_invalid_address(raw: object) -> None:
    _assert_invalid_address(raw)


def test_kind_of_tells_person_from_role() -> None:
    assert kind_of(parse_address("person:alice")) is ParticipantKind.PERSON
    assert kind_of(parse_address("role:support")) is ParticipantKind.ROLE


_names = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,63}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(["person", "role"]), name=_names)
def test_property_any_valid_name_in_any_case_parses_to_its_lower_case_form(
    kind: str, name: str
) -> None:
    expected = f"{kind}:{name}"
    assert parse_address(expected) == expected
    assert parse_address(expected.upper()) == expected
    assert parse_address(kind.capitalize() + ":" + name.swapcase()) == expected


# --- participant sets ---------------------------------------------------------------------------


def test_set_order_and_duplicates_do_not_matter() -> None:
    one = ParticipantSet.of(["person:alice", "role:support"])
    two = ParticipantSet.of(["role:support", "person:alice", "role:support", "Person:Alice"])
    assert one == two
    assert one.members == two.members == ("person:alice", "role:support")
    assert one.key == two.key


def test_set_members_are_sorted_canonical_addresses() -> None:
    group = ParticipantSet.of(["Role:Support", "person:carol", "person:Bob", "person:alice"])
    assert group.members == ("person:alice", "person:bob", "person:carol", "role:support")
    assert list(group) == list(group.members)
    assert len(group) == 4
    assert "person:bob" in group
    assert "person:dave" not in group


@pytest.mark.parametrize(
    "raw",
    [
        [],
        ["person:alice"],
        ["person:alice", "person:alice"],
        ["person:alice", "Person:ALICE", " person:alice "],
    ],
)
def test_fewer_than_two_distinct_participants_is_rejected(raw: list[str]) -> None:
    with pytest.raises(InvalidInput) as info:
        ParticipantSet.of(raw)
    assert info.value.code == "too_few_participants"


def test_a_malformed_member_rejects_the_whole_set() -> None:
    with pytest.raises(InvalidInput) as info:
        ParticipantSet.of(["person:alice", "user:bob"])
    assert info.value.code == "invalid_address"


def test_at_most_max_participants_distinct_members() -> None:
    names = [f"person:p{i}" for i in range(MAX_PARTICIPANTS + 1)]
    assert len(ParticipantSet.of(names[:MAX_PARTICIPANTS])) == MAX_PARTICIPANTS
    with pytest.raises(InvalidInput) as info:
        ParticipantSet.of(names)
    assert info.value.code == "too_many_participants"


def test_different_sets_have_different_keys() -> None:
    sets = [
        ["person:alice", "role:support"],
        ["person:bob", "role:support"],
        ["person:alice", "role:sales"],
        ["person:alice", "person:bob", "role:support"],
        ["person:alice", "person:bob"],
        ["role:alice", "role:support"],
    ]
    keys = {ParticipantSet.of(s).key for s in sets}
    assert len(keys) == len(sets)


def test_key_is_a_fixed_length_hex_digest() -> None:
    key = ParticipantSet.of(["person:alice", "role:support"]).key
    assert len(key) == 64
    assert set(key) <= set(string.hexdigits.lower())


_addresses = st.builds(
    lambda kind, name: f"{kind}:{name}",
    st.sampled_from(["person", "role"]),
    st.from_regex(r"[a-z0-9][a-z0-9._-]{0,8}", fullmatch=True),
)


@settings(max_examples=100, deadline=None)
@given(
    members=st.lists(_addresses, min_size=2, max_size=8, unique=True),
    data=st.data(),
)
def test_property_shuffling_duplicating_and_recasing_give_the_same_set_and_key(
    members: list[str], data: st.DataObject
) -> None:
    base = ParticipantSet.of(members)
    noisy = data.draw(st.permutations(members + data.draw(st.lists(st.sampled_from(members)))))
    noisy = [m.upper() if data.draw(st.booleans()) else m for m in noisy]
    other = ParticipantSet.of(noisy)
    assert other == base
    assert other.key == base.key
    assert base.members == tuple(sorted(members))
