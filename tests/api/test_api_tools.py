"""The agent tools over HTTP behind run tokens: what a run may do is worked out from the run at
every call; memory stays in its conversation; messages sent and retracted reach the timeline."""

from __future__ import annotations

from typing import Any

from core.engine.tools import TOOLS
from tests.api.conftest import TOKEN, Api, Reply
from tests.waiting import eventually


async def _conversation(api: Api, person: str, role: str = "echo") -> tuple[str, str, str]:
    """A conversation of `person` with a role whose run exists: (thread id, run id, run token)."""
    thread = (await api.thread(person, f"role:{role}"))["id"]
    await api.say(thread, person, "hello")

    async def runs_of_thread() -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return runs

    runs = await eventually(runs_of_thread, what=f"the run of {person}'s conversation")
    minted = await api.post(f"/api/v1/runs/{runs[0]['id']}/token")
    assert minted.status == 201, minted.text
    token = minted.body["token"]
    assert token.startswith("rct_")
    return thread, runs[0]["id"], token


async def _tool(api: Api, token: str | None, name: str, arguments: object = None) -> Reply:
    return await api.post(f"/api/v1/tools/{name}", arguments, token=token)


async def test_the_tools_are_listed_with_their_schemas(gateway: Api) -> None:
    _, _, token = await _conversation(gateway, "person:ann")
    listed = await gateway.get("/api/v1/tools", token=token)
    assert listed.status == 200, listed.text
    names = {t["name"] for t in listed.body["tools"]}
    assert names == {
        "peek_pending", "store", "recall", "send_message", "retract", "ask",
        "task_create", "task_get", "task_list", "task_comment", "task_update",
        "subscribe", "unsubscribe",
    }  # fmt: skip
    store = next(t for t in listed.body["tools"] if t["name"] == "store")
    assert store["input_schema"]["required"] == ["payload"]


async def test_memory_stored_in_one_conversation_is_recalled_there_only(gateway: Api) -> None:
    _, _, ann = await _conversation(gateway, "person:ann")
    _, _, bob = await _conversation(gateway, "person:bob")
    stored = await _tool(gateway, ann, "store", {"payload": {"kind": "note", "text": "tea"}})
    assert stored.status == 200, stored.text
    assert stored.body["result"]["shared"] is False

    mine = (await _tool(gateway, ann, "recall", {"query": "tea"})).body["result"]["entries"]
    assert [e["payload"]["text"] for e in mine] == ["tea"] and mine[0]["here"] is True
    theirs = await _tool(gateway, bob, "recall", {"query": "tea"})
    assert theirs.body["result"]["entries"] == []


async def test_send_message_and_retract_reach_the_timeline(gateway: Api) -> None:
    thread, _, token = await _conversation(gateway, "person:ann")
    sent = await _tool(
        gateway, token, "send_message", {"text": "A reminder", "context": {"kind": "reminder"}}
    )
    assert sent.status == 200, sent.text
    page = await gateway.timeline(thread, "?as=person:ann&latest=true&limit=1")
    [event] = page["events"]
    assert event["author"] == "role:echo" and event["text"] == "A reminder"
    assert event["context"] == {"kind": "reminder"}

    retracted = await _tool(gateway, token, "retract", {"message_id": sent.body["result"]["id"],
                                                        "reason": "sent too early"})  # fmt: skip
    assert retracted.status == 200, retracted.text
    page = await gateway.timeline(thread, "?as=person:ann")
    assert [e["retracted"] for e in page["events"] if e["id"] == sent.body["result"]["id"]] == [
        True
    ]
    persons = next(e for e in page["events"] if e.get("author") == "person:ann")
    (await _tool(gateway, token, "retract", {"message_id": persons["id"]})).error(
        403, "not_the_author"
    )


async def test_peek_pending_shows_what_the_run_has_not_read(gateway: Api) -> None:
    _, _, token = await _conversation(gateway, "person:ann")
    peeked = await _tool(gateway, token, "peek_pending", {})
    assert peeked.status == 200, peeked.text
    assert isinstance(peeked.body["result"]["pending"], list)


async def test_a_run_token_is_refused_once_its_person_is_removed(gateway: Api) -> None:
    thread, _, token = await _conversation(gateway, "person:ann")
    await gateway.set_state(thread, "person:ann", "removed")
    (await _tool(gateway, token, "recall", {})).error(403, "person_removed")
    await gateway.set_state(thread, "person:ann", "active")
    assert (await _tool(gateway, token, "recall", {})).status == 200


async def test_bad_tokens_and_bad_calls_get_clear_errors(gateway: Api) -> None:
    _, run_id, token = await _conversation(gateway, "person:ann")
    (await _tool(gateway, "rct_garbage", "recall", {})).error(401, "invalid_run_token")
    (await _tool(gateway, None, "recall", {})).error(401, "invalid_run_token")
    (await _tool(gateway, TOKEN, "recall", {})).error(401, "invalid_run_token")  # operator's
    (await _tool(gateway, token, "remember", {})).error(404, "tool_not_found")
    (await _tool(gateway, token, "store", {})).error(422, "missing_field")
    (await _tool(gateway, token, "store", {"payload": {}, "thread": "x"})).error(
        422, "unknown_field"
    )
    (await _tool(gateway, token, "recall", {"limit": 0})).error(422, "invalid_limit")
    (await _tool(gateway, token, "send_message", {"text": ""})).error(422, "empty_text")
    (await gateway.post("/api/v1/runs/nope/token")).error(404, "run_not_found")
    (await gateway.post(f"/api/v1/runs/{run_id}/token", token=None)).error(401, "unauthorized")


async def test_task_tools_record_the_run_as_the_one_who_changed_the_task(gateway: Api) -> None:
    _, run_id, token = await _conversation(gateway, "person:ann")
    created = await _tool(gateway, token, "task_create", {"title": "Order chairs",
                                                          "assignee": "echo"})  # fmt: skip
    assert created.status == 200, created.text
    task = created.body["result"]
    assert task["status"] == "open" and task["assignee"] == "echo"
    updated = await _tool(gateway, token, "task_update", {"task_id": task["id"],
                                                          "status": "in_progress"})  # fmt: skip
    assert updated.body["result"]["changed"] is True
    commented = await _tool(gateway, token, "task_comment", {"task_id": task["id"],
                                                             "text": "ordered"})  # fmt: skip
    assert commented.body["result"]["kind"] == "commented"
    listed = await _tool(gateway, token, "task_list", {"status": "in_progress"})
    assert [t["id"] for t in listed.body["result"]["tasks"]] == [task["id"]]

    history = (await gateway.get(f"/api/v1/tasks/{task['id']}")).body["history"]
    assert [e["kind"] for e in history] == ["created", "updated", "commented"]
    assert {e["actor"]["run_id"] for e in history} == {run_id}
    assert {e["actor"]["kind"] for e in history} == {"run"}
    (await _tool(gateway, token, "task_update", {"task_id": task["id"], "status": "later"})).error(
        422, "invalid_status"
    )
    (await _tool(gateway, token, "task_get", {"task_id": "nope"})).error(404, "task_not_found")


async def test_subscribing_makes_task_changes_wake_the_conversation(gateway: Api) -> None:
    thread, run_id, token = await _conversation(gateway, "person:ann")
    task = (await _tool(gateway, token, "task_create", {"title": "Paint the door"})).body["result"]
    subscribed = await _tool(gateway, token, "subscribe", {"task_id": task["id"]})
    assert subscribed.body["result"] == {"task_id": task["id"], "subscribed": True, "new": True}
    done = {"author": "person:bob", "status": "done"}
    assert (await gateway.call("PATCH", f"/api/v1/tasks/{task['id']}", json=done)).status == 200

    async def news_turns() -> list[dict[str, Any]]:
        turns = (await gateway.get(f"/api/v1/runs/{run_id}/turns")).body["turns"]
        return [t for t in turns if t["cause"] == "news"]

    await eventually(news_turns, what="the news woke the run")
    turns = (await gateway.get(f"/api/v1/runs/{run_id}/turns")).body["turns"]
    news = next(t for t in turns if t["cause"] == "news")
    assert news["outcome"] == "silent"  # echo answers people only
    assert news["prompt"]["tasks"][0]["events"][0]["changes"]["status"]["to"] == "done"
    gone = await _tool(gateway, token, "unsubscribe", {"task_id": task["id"]})
    assert gone.body["result"]["was"] is True
    (await _tool(gateway, token, "subscribe", {"task_id": "nope"})).error(404, "task_not_found")
    assert thread


async def test_calls_past_the_turns_budget_are_refused_and_calls_between_turns_not_counted(
    gateway: Api,
) -> None:
    # slow's turn takes a minute and its role allows two tool calls a turn (tests/api/conftest)
    _, run_id, token = await _conversation(gateway, "person:ann", "slow")

    async def running() -> bool:
        return bool((await gateway.get(f"/api/v1/runs/{run_id}")).body["running"])

    await eventually(running, what="slow's turn started")
    for _ in range(2):
        assert (await _tool(gateway, token, "recall", {})).status == 200
    refused = await _tool(gateway, token, "recall", {})
    refused.error(429, "tool_budget_spent")
    assert "2 tool calls" in refused.body["error"]["message"]
    (await _tool(gateway, token, "store", {"payload": {"a": 1}})).error(429, "tool_budget_spent")

    cancelled = await gateway.post(f"/api/v1/runs/{run_id}/cancel")
    assert cancelled.status == 200, cancelled.text
    for _ in range(3):  # no turn runs: an operator's token used by hand is not counted
        assert (await _tool(gateway, token, "recall", {})).status == 200
    [turn] = (await gateway.get(f"/api/v1/runs/{run_id}/turns")).body["turns"]
    assert turn["outcome"] == "cancelled"


async def test_a_message_sent_with_the_tools_answers_what_the_run_has_not_read(
    gateway: Api,
) -> None:
    """`send_message` from outside the gateway's process records what it answers: the latest
    person's message past the run's cursor (the turn it is part of answers it), or nothing — the
    role's initiative — when the run has read everything."""
    thread, _, token = await _conversation(gateway, "person:ann", role="slow")  # a turn runs
    [hello] = (await gateway.timeline(thread, "?as=person:ann"))["events"]
    sent = await _tool(gateway, token, "send_message", {"text": "Looking into it."})
    assert sent.status == 200, sent.text
    page = await gateway.timeline(thread, "?as=person:ann&latest=true&limit=1")
    assert page["events"][0]["in_reply_to"] == hello["id"]

    thread, _, token = await _conversation(gateway, "person:bob")  # echo answers at once

    async def answered() -> bool:
        events = (await gateway.timeline(thread, "?as=person:bob"))["events"]
        return any(e.get("author") == "role:echo" for e in events)

    await eventually(answered, what="echo's reply")
    [reply] = [
        e
        for e in (await gateway.timeline(thread, "?as=person:bob"))["events"]
        if e.get("author") == "role:echo"
    ]
    assert reply["in_reply_to"] is not None  # the turn's own reply answers bob's message

    async def read_all() -> bool:
        runs = (await gateway.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return bool(runs[0]["cursor"] >= reply["seq"])

    await eventually(read_all, what="the run's cursor past its reply")
    sent = await _tool(gateway, token, "send_message", {"text": "By the way…"})
    page = await gateway.timeline(thread, "?as=person:bob&latest=true&limit=1")
    assert page["events"][0]["id"] == sent.body["result"]["id"]
    assert page["events"][0]["in_reply_to"] is None


async def test_the_listed_schemas_are_the_declared_ones_with_every_argument_described(
    gateway: Api,
) -> None:
    """`GET /api/v1/tools` shows each tool's input schema as declared, with a description of
    every argument and the "exactly one of" rule of `subscribe` (a task id or an external key)."""
    _, _, token = await _conversation(gateway, "person:ann")
    listed = (await gateway.get("/api/v1/tools", token=token)).body["tools"]
    schemas = {t["name"]: t["input_schema"] for t in listed}
    assert schemas == {name: dict(tool.input_schema) for name, tool in TOOLS.items()}
    for name, schema in schemas.items():
        for argument, prop in schema["properties"].items():
            assert prop["description"], (name, argument)
    assert schemas["subscribe"]["minProperties"] == schemas["subscribe"]["maxProperties"] == 1
