"""The thread's memory policy value (core/model/memory_policy.py)."""

from __future__ import annotations

import dataclasses

import pytest

from core.model.errors import InvalidInput
from core.model.memory_policy import MemoryPolicy


def test_default_policy_keeps_memories_in_the_thread() -> None:
    assert MemoryPolicy().thread_only is True
    assert MemoryPolicy().to_json() == {"thread_only": True}


@pytest.mark.parametrize("value", [True, False])
def test_parse_and_to_json_round_trip(value: bool) -> None:
    policy = MemoryPolicy.parse({"thread_only": value})
    assert policy == MemoryPolicy(thread_only=value)
    assert policy.to_json() == {"thread_only": value}
    assert MemoryPolicy.parse(policy.to_json()) == policy


@pytest.mark.parametrize(
    "raw",
    [
        None,
        True,
        "thread_only",
        [],
        [("thread_only", True)],
        {},
        {"threadOnly": True},
        {"thread_only": True, "extra": 1},
        {"thread_only": 1},
        {"thread_only": 0},
        {"thread_only": "true"},
        {"thread_only": None},
        {"thread_only": [True]},
    ],
)
def test_bad_shapes_are_invalid_memory_policy(raw: object) -> None:
    with pytest.raises(InvalidInput) as info:
        MemoryPolicy.parse(raw)
    assert info.value.code == "invalid_memory_policy"


def test_policy_is_an_immutable_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        MemoryPolicy().thread_only = False  # type: ignore[misc]
