"""`GET /api/v1/search/messages`: messages found by their text in every conversation, newest
first, case aside, `%` and `_` only themselves, paged by position; retracted messages and erased
tombstones are not found; the scan is bounded and says where to go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine

from core.storage.message_search import found_messages
from tests.api.conftest import Api


async def _texts(api: Api, query: str) -> tuple[list[str], Any]:
    answer = await api.get(f"/api/v1/search/messages?{query}")
    assert answer.status == 200, answer.text
    return [m["text"] for m in answer.body["messages"]], answer.body["next"]


async def test_messages_are_found_newest_first_in_every_conversation(api: Api) -> None:
    ann = (await api.thread("person:ann", "person:zed"))["id"]
    bob = (await api.thread("person:bob", "person:zed"))["id"]
    await api.say(ann, "person:ann", "My Invoice is late")
    await api.say(bob, "person:bob", "where is the invoice?")
    await api.say(ann, "person:ann", "thanks")
    await api.say(bob, "person:bob", "100% sure_thing")

    found, more = await _texts(api, "q=invoice")

    assert found == ["where is the invoice?", "My Invoice is late"]
    assert more is None
    answer = await api.get("/api/v1/search/messages?q=invoice&limit=1")
    [first] = answer.body["messages"]
    assert (first["thread_id"], first["author"], first["seq"]) == (bob, "person:bob", 1)
    older, _ = await _texts(api, f"q=invoice&before={answer.body['next']}")
    assert older == ["My Invoice is late"]
    assert (await _texts(api, "q=0%25 sure_"))[0] == ["100% sure_thing"]
    assert (await _texts(api, "q=%25"))[0] == ["100% sure_thing"]  # % is only itself
    assert (await _texts(api, "q=_"))[0] == ["100% sure_thing"]


async def test_retracted_messages_are_not_found(api: Api) -> None:
    ann = (await api.thread("person:ann", "person:zed"))["id"]
    said = await api.say(ann, "person:ann", "my password is hunter2")
    gone = await api.post(
        f"/api/v1/threads/{ann}/messages/{said['id']}/retract", {"author": "person:ann"}
    )
    assert gone.status == 201, gone.text

    assert (await _texts(api, "q=hunter2"))[0] == []


async def test_a_bad_query_is_a_422(api: Api) -> None:
    assert (await api.get("/api/v1/search/messages")).error(422, "missing_parameter")
    assert (await api.get("/api/v1/search/messages?q=")).error(422, "invalid_parameter")
    assert (await api.get(f"/api/v1/search/messages?q={'x' * 201}")).error(422)
    assert (await api.get("/api/v1/search/messages?q=a&before=0")).error(422, "invalid_parameter")


async def test_the_scan_is_bounded_and_says_where_to_go_on(api: Api, tmp_path: Path) -> None:
    ann = (await api.thread("person:ann", "person:zed"))["id"]
    await api.say(ann, "person:ann", "the needle")
    for n in range(5):
        await api.say(ann, "person:ann", f"hay {n}")
    engine = create_engine(f"sqlite:///{tmp_path}/t.db")
    try:
        with engine.connect() as connection:
            first = found_messages(connection, "needle", before=None, limit=10, scanned=3)
            assert first.messages == [] and first.next is not None  # the three newest looked at
            second = found_messages(connection, "needle", before=first.next, limit=10, scanned=3)
            assert [m.text for m in second.messages] == ["the needle"] and second.next is None
    finally:
        engine.dispose()
