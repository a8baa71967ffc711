"""The domain's error family (core/model/errors.py): stable codes, readable messages, one
hierarchy."""

from __future__ import annotations

import pytest

from core.model.errors import Conflict, InvalidInput, NotAllowed, NotFound, RolecallError, TooLarge
from core.model.membership import IllegalStateChange, NeverAMember


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (RolecallError, "error"),
        (InvalidInput, "invalid"),
        (TooLarge, "too_large"),
        (NotFound, "not_found"),
        (NotAllowed, "forbidden"),
        (Conflict, "conflict"),
        (IllegalStateChange, "illegal_state_change"),
        (NeverAMember, "never_a_member"),
    ],
)
def test_each_error_class_has_its_stable_default_code(cls: type[RolecallError], code: str) -> None:
    error = cls("something went wrong")
    assert error.code == code
    assert isinstance(error, RolecallError)


def test_message_is_kept_for_people_and_is_the_str() -> None:
    error = InvalidInput("the text is empty")
    assert error.message == "the text is empty"
    assert str(error) == "the text is empty"


def test_code_can_be_refined_per_instance_without_touching_the_class() -> None:
    error = InvalidInput("bad address", code="invalid_address")
    assert error.code == "invalid_address"
    assert InvalidInput.code == "invalid"
    assert InvalidInput("other").code == "invalid"


def test_state_machine_errors_are_conflicts_so_they_map_to_409() -> None:
    assert issubclass(IllegalStateChange, Conflict)
    assert issubclass(NeverAMember, Conflict)


def test_the_http_families_are_distinct_classes() -> None:
    families = [InvalidInput, TooLarge, NotFound, NotAllowed, Conflict]
    for a in families:
        for b in families:
            assert issubclass(a, b) == (a is b)
