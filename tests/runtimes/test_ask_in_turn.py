"""An agent asks during its turn (the `ask` tool, in process): while it waits for the person
the role's `turn_timeout` does not count, the answer comes back into the same turn and the
reply follows it; a turn cancelled while it waits cancels its question."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from channels.edge.requests import DATABASE_KEY
from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.engine.runtimes.registry import Runtimes
from core.model.participants import Address
from core.model.roles import Role
from core.model.timeline import ApprovalRequested, ThreadId
from core.storage.database import Database
from tests.api.conftest import Api
from tests.runtimes.test_failed_steps import ANN, gateway
from tests.waiting import eventually


class Asker(BuiltinAgent):
    """Asks before it answers, then says what it was told."""

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        answered = await tools.call("ask", {"question": "Go ahead?", "expires_in": 300})
        yield Reply(f"You said {answered['answer']}.")


ROLE = Role.model_validate(
    {
        "name": "asker",
        "display_name": "Asker",
        "runtime": {"kind": "builtin", "agent": "asker"},
        "turn_timeout": 0.3,
    }
)


async def _question(api: Api, thread: str) -> ApprovalRequested:
    db: Database = api.server.app[DATABASE_KEY]

    async def pending() -> ApprovalRequested | None:
        found = await db.approvals.of_thread(ThreadId(thread), pending=True)
        return found[0][0] if found else None

    return await eventually(pending, what="the agent's question")


async def _turns(api: Api, thread: str) -> list[dict[str, Any]]:
    runs = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
    turns: list[dict[str, Any]] = (await api.get(f"/api/v1/runs/{runs[0]['id']}/turns")).body[
        "turns"
    ]
    return turns


async def test_the_turn_waits_for_the_answer_past_its_timeout_and_replies(tmp_path: Path) -> None:
    async with gateway(tmp_path, ROLE, runtimes=Runtimes({"asker": Asker})) as api:
        thread = (await api.thread(ANN, "role:asker"))["id"]
        await api.say(thread, ANN, "Deploy it")
        question = await _question(api, thread)
        # Answered after the role's turn_timeout (0.3 s) has passed twice over: without the
        # timeout held while it waits, the attempt would have failed by now.
        await asyncio.sleep(0.6)
        db: Database = api.server.app[DATABASE_KEY]
        await db.approvals.answer(question, Address(ANN), "yes", channel="web")
        [turn] = await eventually(lambda: _turns(api, thread), what="the turn's end")
        assert turn["outcome"] == "replied", turn
        events = (await api.timeline(thread))["events"]
        assert [e["kind"] for e in events][-3:] == [
            "approval_requested",
            "approval_resolved",
            "message",
        ]
        assert events[-1]["text"] == "You said Yes."


async def test_a_turn_cancelled_while_it_waits_cancels_its_question(tmp_path: Path) -> None:
    async with gateway(tmp_path, ROLE, runtimes=Runtimes({"asker": Asker})) as api:
        thread = (await api.thread(ANN, "role:asker"))["id"]
        await api.say(thread, ANN, "Deploy it")
        question = await _question(api, thread)
        runs = (await api.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        cancelled = await api.post(f"/api/v1/runs/{runs[0]['id']}/cancel")
        assert cancelled.status == 200, cancelled.text
        db: Database = api.server.app[DATABASE_KEY]

        async def resolution() -> Any:
            return (await db.approvals.get(question.id))[1]

        resolved = await eventually(resolution, what="the question's end")
        assert resolved.outcome.value == "cancelled"
