"""Joining a person by a verified email on first contact, on every backend: an identity with no
person joins the one active person with its email (case-insensitively), also under races; an
ambiguous or unknown email, a deactivated or merged person, or a caller that does not vouch for
the email (`join_by_email=False`) makes a new person; an identity that has a person is never
moved by an email."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from core.model.people import parse_identity
from core.storage.database import Database, open_database

SLACK_A = parse_identity("slack:t1:UA")
SLACK_B = parse_identity("slack:t1:UB")
WEB_A = parse_identity("web:example.com:a-1")


async def test_a_first_contact_joins_the_one_active_person_with_the_email(
    database: Database,
) -> None:
    ann = await database.people.create(slug="ann", display_name="Ann", email="Ann@Example.com")
    joined = await database.people.resolve(
        SLACK_A, display_name="ann (slack)", email="ann@EXAMPLE.com", join_by_email=True
    )
    assert joined == ann  # name and email as stored: the ones given were for a new person
    assert await database.people.of_identity(SLACK_A) == ann
    _, identities = await database.people.profile("ann")
    assert [str(i.identity) for i in identities] == [str(SLACK_A)]
    assert [p.slug for p in await database.people.list()] == ["ann"]


async def test_without_join_by_email_the_email_is_only_stored(database: Database) -> None:
    await database.people.create(slug="ann", display_name="Ann", email="ann@example.com")
    made = await database.people.resolve(SLACK_A, display_name="Ann B", email="ann@example.com")
    assert made.slug == "ann-b" and made.email == "ann@example.com"


async def test_an_unknown_or_ambiguous_email_makes_a_new_person(database: Database) -> None:
    alone = await database.people.resolve(
        SLACK_A, display_name="Ann", email="ann@example.com", join_by_email=True
    )
    assert alone.slug == "ann" and alone.email == "ann@example.com"
    await database.people.create(slug="ann-too", display_name="Ann", email="ANN@example.com")
    again = await database.people.resolve(
        SLACK_B, display_name="Ann", email="ann@example.com", join_by_email=True
    )
    assert again.slug not in ("ann", "ann-too")
    assert {p.slug for p in await database.people.list()} == {"ann", "ann-too", again.slug}


async def test_deactivated_and_merged_people_are_not_joined_but_do_not_count(
    database: Database,
) -> None:
    await database.people.create(slug="old", display_name="Old", email="ann@example.com")
    await database.people.add_identity("old", WEB_A)
    await database.people.create(slug="ann", display_name="Ann", email="ann@example.com")
    code = await database.people.new_link_code("ann", timedelta(minutes=5))
    await database.people.redeem(code.code, WEB_A)  # old is merged into ann
    assert (await database.people.get("old")).state == "merged"
    await database.people.create(slug="off", display_name="Off", email="ann@example.com")
    await database.people.deactivate("off")

    joined = await database.people.resolve(
        SLACK_A, display_name="A", email="ann@example.com", join_by_email=True
    )
    assert joined.slug == "ann"
    await database.people.deactivate("ann")
    alone = await database.people.resolve(
        SLACK_B, display_name="B", email="ann@example.com", join_by_email=True
    )
    assert alone.slug == "b"  # nobody active has the email: a new person


async def test_an_identity_with_a_person_is_not_moved_by_an_email(database: Database) -> None:
    first = await database.people.resolve(SLACK_A, display_name="Ann", email="ann@example.com")
    await database.people.create(slug="ann-op", display_name="Ann", email="ann@example.com")
    again = await database.people.resolve(
        SLACK_A, display_name="Ann", email="ann@example.com", join_by_email=True
    )
    assert again == first


async def test_concurrent_first_contacts_join_one_person(database: Database) -> None:
    await database.people.create(slug="ann", display_name="Ann", email="ann@example.com")
    people = await asyncio.gather(
        *(
            database.people.resolve(
                SLACK_A, display_name="Ann", email="ann@example.com", join_by_email=True
            )
            for _ in range(20)
        )
    )
    assert {p.slug for p in people} == {"ann"}
    assert [p.slug for p in await database.people.list()] == ["ann"]


async def test_first_contacts_racing_from_two_processes_join_one_person(
    database_url: str,
) -> None:
    one, two = await open_database(database_url), await open_database(database_url)
    try:
        await one.people.create(slug="ann", display_name="Ann", email="ann@example.com")
        identities = [parse_identity(f"slack:t1:U{i}") for i in range(6)]
        found = await asyncio.gather(
            *(
                db.people.resolve(
                    identity, display_name="Ann", email="ann@example.com", join_by_email=True
                )
                for identity in identities
                for db in (one, two, two, one)
            )
        )
        assert {p.slug for p in found} == {"ann"}
        _, linked = await one.people.profile("ann")
        assert sorted(str(i.identity) for i in linked) == sorted(map(str, identities))
        assert [p.slug for p in await one.people.list()] == ["ann"]
    finally:
        await one.close()
        await two.close()
