"""Lists paged by id (`after=ID`): a malformed id is 422 `invalid_parameter` naming the parameter,
never an empty page; an id of the right shape that is not in the list pages on as usual."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api

MALFORMED = ("nope", "0" * 31, "0" * 33, "A" * 32, "g" * 32)
LISTS = (
    "/api/v1/threads?participant=person:alice",
    "/api/v1/runs?role=concierge",
    "/api/v1/tasks",
    "/api/v1/roles/concierge/memory",
)


@pytest.mark.parametrize("listing", LISTS)
async def test_a_malformed_after_is_refused_by_every_id_paged_list(api: Api, listing: str) -> None:
    joiner = "&" if "?" in listing else "?"
    for after in MALFORMED:
        reply = await api.get(f"{listing}{joiner}after={after}")
        message = reply.error(422, "invalid_parameter")
        assert "'after'" in message and after in message


async def test_a_well_formed_after_pages_on_from_that_id(api: Api) -> None:
    resolved = await api.post(
        "/api/v1/threads", {"participants": ["person:alice", "role:concierge"]}
    )
    thread = resolved.body["id"]
    listing = "/api/v1/threads?participant=person:alice"
    assert [t["id"] for t in (await api.get(listing)).body["threads"]] == [thread]
    assert (await api.get(f"{listing}&after={thread}")).body["threads"] == []
    assert [t["id"] for t in (await api.get(f"{listing}&after={'0' * 32}")).body["threads"]] == [
        thread
    ]
    for after in ("0" * 32, "f" * 32):
        assert (await api.get(f"/api/v1/tasks?after={after}")).status == 200
        assert (await api.get(f"/api/v1/runs?role=concierge&after={after}")).status == 200
