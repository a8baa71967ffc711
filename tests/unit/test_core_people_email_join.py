"""The rule of joining by a verified email (`core.model.people.email_join_target`): of the people
who have the email, exactly one must be active and not merged; otherwise nobody is joined."""

from __future__ import annotations

from datetime import UTC, datetime

from core.model.people import Person, email_join_target

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _person(slug: str, *, active: bool = True, merged_into: str | None = None) -> Person:
    return Person(
        slug=slug,
        display_name=slug.title(),
        email=f"{slug}@example.com",
        active=active,
        created_at=AT,
        merged_into=merged_into,
    )


def test_the_one_active_person_is_joined() -> None:
    ann = _person("ann")
    assert email_join_target([ann]) == ann
    assert email_join_target([_person("old", active=False), ann]) == ann
    assert email_join_target([ann, _person("was", active=False, merged_into="ann")]) == ann


def test_nobody_or_several_join_no_one() -> None:
    assert email_join_target([]) is None
    assert email_join_target([_person("off", active=False)]) is None
    assert email_join_target([_person("ann"), _person("anna")]) is None
