"""Reading a timeline over HTTP: the operator's whole view, a participant's filtered view."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api

ALICE, BOB, CAROL, SUPPORT = "person:alice", "person:bob", "person:carol", "role:support"


@pytest.fixture
async def thread_id(api: Api) -> str:
    thread = await api.thread(ALICE, BOB, CAROL, SUPPORT)
    return str(thread["id"])


def texts(page: dict[str, Any]) -> list[str]:
    """Each event as a short word: the message text, or `participant>to_state`."""
    return [
        e["text"] if e["kind"] == "message" else f"{e['participant']}>{e['to_state']}"
        for e in page["events"]
    ]


async def say_many(api: Api, thread_id: str, count: int) -> None:
    for n in range(1, count + 1):
        await api.say(thread_id, ALICE, f"m{n}")


async def test_the_operator_view_is_every_event_in_seq_order(api: Api, thread_id: str) -> None:
    await api.say(thread_id, ALICE, "hello")
    await api.set_state(thread_id, BOB, "removed")
    await api.say(thread_id, SUPPORT, "hi")

    page = await api.timeline(thread_id)

    assert [e["seq"] for e in page["events"]] == [1, 2, 3]
    assert texts(page) == ["hello", f"{BOB}>removed", "hi"]
    assert page["more"] is False


async def test_an_empty_timeline_is_an_empty_page(api: Api, thread_id: str) -> None:
    page = await api.timeline(thread_id)

    assert page["events"] == []
    assert page["more"] is False


async def test_paging_forward_with_after_and_next_reads_each_event_once(
    api: Api, thread_id: str
) -> None:
    await say_many(api, thread_id, 5)

    first = await api.timeline(thread_id, "?limit=2")
    second = await api.timeline(thread_id, f"?limit=2&after={first['next']}")
    third = await api.timeline(thread_id, f"?limit=2&after={second['next']}")

    assert [texts(first), texts(second), texts(third)] == [["m1", "m2"], ["m3", "m4"], ["m5"]]
    assert [first["more"], second["more"], third["more"]] == [True, True, False]
    later = await api.timeline(thread_id, f"?after={third['next']}")
    assert later["events"] == []


async def test_the_default_page_is_50_and_the_largest_500(api: Api, thread_id: str) -> None:
    await say_many(api, thread_id, 51)

    default = await api.timeline(thread_id)
    largest = await api.timeline(thread_id, "?limit=500")

    assert (len(default["events"]), default["more"]) == (50, True)
    assert (len(largest["events"]), largest["more"]) == (51, False)


async def test_latest_reads_the_newest_page_and_before_pages_back(api: Api, thread_id: str) -> None:
    await say_many(api, thread_id, 5)

    newest = await api.timeline(thread_id, "?latest=true&limit=2")
    earlier = await api.timeline(thread_id, f"?before={newest['next']}&limit=2")
    earliest = await api.timeline(thread_id, f"?before={earlier['next']}&limit=2")

    assert [texts(newest), texts(earlier), texts(earliest)] == [["m4", "m5"], ["m2", "m3"], ["m1"]]
    assert [newest["more"], earlier["more"], earliest["more"]] == [True, True, False]
    assert earliest["next"] is None


async def test_malformed_numbers_are_422(api: Api, thread_id: str) -> None:
    bad = [
        "limit=0", "limit=501", "limit=-1", "limit=abc", "limit=1.5", "limit=", "limit=%201",
        "after=-1", "after=x", "after=1e3", f"after={2**53}", "after=99999999999999999999999",
        "before=0", "before=-3", f"before={2**53}", "latest=yes", "latest=1",
    ]  # fmt: skip
    for query in bad:
        reply = await api.get(f"/api/v1/threads/{thread_id}/timeline?{query}")
        assert reply.error(422).startswith("query parameter"), query


async def test_the_largest_json_safe_cursor_is_accepted_and_reads_nothing(
    api: Api, thread_id: str
) -> None:
    await api.say(thread_id, ALICE, "hi")

    after = await api.timeline(thread_id, f"?after={2**53 - 1}")
    before = await api.timeline(thread_id, f"?before={2**53 - 1}")

    assert after["events"] == []
    assert texts(before) == ["hi"]


async def test_conflicting_or_unknown_parameters_are_422(api: Api, thread_id: str) -> None:
    path = f"/api/v1/threads/{thread_id}/timeline"

    (await api.get(f"{path}?after=1&before=3")).error(422, "conflicting_parameters")
    (await api.get(f"{path}?after=1&latest=true")).error(422, "conflicting_parameters")
    (await api.get(f"{path}?before=3&latest=true")).error(422, "conflicting_parameters")
    (await api.get(f"{path}?afer=1")).error(422, "unknown_parameter")
    (await api.get(f"{path}?after=1&after=2")).error(422, "repeated_parameter")


async def test_as_a_non_member_is_403_and_as_a_malformed_address_is_422(
    api: Api, thread_id: str
) -> None:
    path = f"/api/v1/threads/{thread_id}/timeline"

    (await api.get(f"{path}?as=person:dave")).error(403, "not_a_member")
    assert (await api.get(f"{path}?as=dave")).error(422, "invalid_address").startswith("as:")


async def test_the_timeline_of_an_unknown_thread_is_404(api: Api) -> None:
    (await api.get("/api/v1/threads/nope/timeline")).error(404)
    (await api.get(f"/api/v1/threads/nope/timeline?as={ALICE}")).error(404)


async def test_a_removed_participant_never_sees_their_blackout_even_after_re_add(
    api: Api, thread_id: str
) -> None:
    await api.say(thread_id, ALICE, "before")
    await api.set_state(thread_id, BOB, "removed")
    await api.say(thread_id, ALICE, "during")
    await api.set_state(thread_id, CAROL, "removed")
    await api.say(thread_id, SUPPORT, "still during")
    await api.set_state(thread_id, BOB, "active")
    await api.say(thread_id, ALICE, "after")

    bob = await api.timeline(thread_id, f"?as={BOB}")
    carol = await api.timeline(thread_id, f"?as={CAROL}")
    alice = await api.timeline(thread_id, f"?as={ALICE}")
    operator = await api.timeline(thread_id)

    # Bob sees his own removal and re-add, but neither what was said nor Carol's removal between.
    assert texts(bob) == ["before", f"{BOB}>removed", f"{BOB}>active", "after"]
    # Carol, still removed, sees up to her own removal and nothing after it.
    assert texts(carol) == ["before", f"{BOB}>removed", "during", f"{CAROL}>removed"]
    everything = [
        "before", f"{BOB}>removed", "during", f"{CAROL}>removed", "still during",
        f"{BOB}>active", "after",
    ]  # fmt: skip
    assert texts(alice) == texts(operator) == everything


async def test_a_filtered_view_pages_over_visible_events_only(api: Api, thread_id: str) -> None:
    await api.say(thread_id, ALICE, "a")
    await api.set_state(thread_id, BOB, "removed")
    await say_many(api, thread_id, 3)
    await api.set_state(thread_id, BOB, "active")
    await api.say(thread_id, ALICE, "z")
    seen: list[str] = []
    after = 0

    while True:
        page = await api.timeline(thread_id, f"?as={BOB}&limit=1&after={after}")
        seen += texts(page)
        if not page["more"]:
            break
        after = page["next"]
    newest = await api.timeline(thread_id, f"?as={BOB}&latest=true&limit=3")

    assert seen == ["a", f"{BOB}>removed", f"{BOB}>active", "z"]
    assert texts(newest) == [f"{BOB}>removed", f"{BOB}>active", "z"]


async def test_a_removed_participant_can_still_read_what_they_saw(api: Api, thread_id: str) -> None:
    await api.say(thread_id, ALICE, "before")
    await api.set_state(thread_id, BOB, "removed")

    page = await api.timeline(thread_id, f"?as={BOB}")

    assert texts(page) == ["before", f"{BOB}>removed"]
