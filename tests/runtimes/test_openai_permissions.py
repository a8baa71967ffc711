"""A model's tool calls under the role's `permissions`: a tool marked `ask` is held until a
person of the conversation allows it (and runs only then), a refusal or an expiry answers the
model "not run", a tool marked `deny` is never run; the transcript notes each. On SQLite and
PostgreSQL, with the real run host and tools against the fake chat-completions server."""

from __future__ import annotations

import json
from typing import Any

from core.model.participants import Address
from core.model.timeline import ApprovalRequested, ThreadId
from tests.host.scene import Scene
from tests.runtimes.fake_openai import FakeOpenAI, call, say
from tests.runtimes.test_openai_runtime import ANN, _turns, fake, hosted, model_role
from tests.waiting import eventually

__all__ = ["fake"]  # the fake model server, a fixture

POLICY: dict[str, Any] = {
    "runtime": {"permissions": {"store": "ask", "task_create": "deny", "*": "allow"}}
}


async def _question(scene: Scene, thread: ThreadId) -> ApprovalRequested:
    async def pending() -> ApprovalRequested | None:
        found = await scene.db.approvals.of_thread(thread, pending=True)
        return found[0][0] if found else None

    return await eventually(pending, what="the permission put to the people")


async def _memory(scene: Scene) -> list[Any]:
    return list(await scene.db.memory.list("model", after=None, limit=10))


def _tool_results(fake: FakeOpenAI, request: int) -> list[dict[str, Any]]:
    return [
        json.loads(m["content"]) for m in fake.requests[request].messages if m["role"] == "tool"
    ]


async def test_a_tool_marked_ask_runs_once_a_person_allows_it(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(call("store", {"payload": {"desk": "4B"}}), say("Stored."))
    async with hosted(database_url, model_role(fake, **POLICY)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "remember my desk")
        asked = await _question(scene, thread)
        assert asked.title == "Model wants to use store"
        assert asked.tool is not None and asked.tool.to_json() == {
            "name": "store",
            "arguments": {"payload": {"desk": "4B"}},
        }
        assert [o.id for o in asked.options] == ["allow", "reject"]
        assert await _memory(scene) == []  # not run before the yes
        await scene.db.approvals.answer(asked, Address(ANN), "allow", channel="web")
        assert await scene.replies(thread, "role:model", 1) == ["Stored."]
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)
        assert len(await _memory(scene)) == 1

    [permission] = [s for s in turn.steps if s["kind"] == "permission"]
    assert permission["text"] == (
        f"store: asked the people (approval {asked.id}): answered 'Allow' by person:ann (web)"
    )
    [stored] = [s for s in turn.steps if s["kind"] == "tool_call"]
    assert stored["error"] is None


async def test_a_refused_or_denied_call_is_not_run_and_the_model_is_told(
    fake: FakeOpenAI, database_url: str
) -> None:
    fake.script(
        call("store", {"payload": {"desk": "4B"}}),
        call("task_create", {"title": "Order a desk"}),
        say("Understood, I will not."),
    )
    async with hosted(database_url, model_role(fake, **POLICY)) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "remember my desk")
        asked = await _question(scene, thread)
        await scene.db.approvals.answer(asked, Address(ANN), "reject", channel="api")
        assert await scene.replies(thread, "role:model", 1) == ["Understood, I will not."]
        assert await _memory(scene) == []
        assert await scene.db.tasks.list() == []
        run = await scene.run_of(thread)
        [turn] = await _turns(scene, run.id, 1)

    assert _tool_results(fake, 1) == [
        {
            "error": "not run: store: asked the people (approval "
            f"{asked.id}): answered 'Reject' by person:ann (api)"
        }
    ]
    assert _tool_results(fake, 2)[-1] == {
        "error": "not run: task_create: refused by the role's permissions"
    }
    notes = [s["text"] for s in turn.steps if s["kind"] == "permission"]
    assert notes[1] == "task_create: refused by the role's permissions"


async def test_an_unanswered_call_expires_as_a_refusal(fake: FakeOpenAI, database_url: str) -> None:
    fake.script(call("store", {"payload": {"desk": "4B"}}), say("No answer, so I did not."))
    role = model_role(fake, approvals={"expires_in": 1}, **POLICY)
    async with hosted(database_url, role) as scene:
        thread = await scene.conversation(ANN, "role:model")
        await scene.say(thread, ANN, "remember my desk")
        assert await scene.replies(thread, "role:model", 1) == ["No answer, so I did not."]
        assert await _memory(scene) == []
    [result] = _tool_results(fake, 1)
    assert result["error"].endswith("expired unanswered")
