"""An ACP agent's permission request that the role's `permissions` put to people (`ask`) is an
approval of the conversation: the turn waits for a person's answer from any channel (here the
API), the agent gets the option chosen — or a refusal when nobody answered in time or nobody
could be asked — and the transcript says which. While it waits the turn holds no slot; a gateway
restarted meanwhile keeps the question open and the answer reaches the agent of the rerun turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from channels.edge.requests import DATABASE_KEY
from core.model.timeline import ApprovalRequested, ThreadId
from core.storage.database import Database
from tests.runtimes.test_acp_runtime import Scene, fake, serving
from tests.waiting import eventually

ASK_EXECUTE = {"execute": "ask", "read": "allow"}


async def _pending(scene: Scene, thread: str, count: int = 1) -> list[ApprovalRequested]:
    db: Database = scene.app[DATABASE_KEY]

    async def found() -> list[ApprovalRequested] | None:
        pending = await db.approvals.of_thread(ThreadId(thread), pending=True)
        return [asked for asked, _ in pending] if len(pending) >= count else None

    asked: list[ApprovalRequested] = await eventually(
        found, what=f"{count} pending approval(s) in {thread}", within=30
    )
    return asked


async def _asked(scene: Scene, thread: str) -> list[ApprovalRequested]:
    """Every approval of the conversation, resolved or not."""
    db: Database = scene.app[DATABASE_KEY]
    return [asked for asked, _ in await db.approvals.of_thread(ThreadId(thread), pending=False)]


async def _answer(scene: Scene, approval: str, option: str, who: str) -> Any:
    return await scene.api.post(f"/api/v1/approvals/{approval}", {"option": option, "as": who})


def _permission_step(turn: dict[str, Any]) -> str:
    [step] = [s for s in turn["steps"] if s["kind"] == "permission"]
    text: str = step["text"]
    return text


async def test_a_permission_the_policy_asks_about_waits_for_a_persons_answer(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, fake(permissions=ASK_EXECUTE)) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "ask rm execute")
        [asked] = await _pending(scene, thread)
        assert asked.title == "Run rm"
        assert asked.tool is not None and asked.tool.to_json() == {
            "name": "rm",
            "arguments": {"command": "rm"},
        }
        assert [(o.id, o.label, o.kind.value) for o in asked.options] == [
            ("yes", "Allow", "allow_once"),
            ("always", "Always", "allow_always"),
            ("no", "Reject", "reject_once"),
        ]
        assert asked.author == "role:fake" and asked.approvers == ()
        assert not scene.journal("permission")  # the agent is still waiting

        answered = await _answer(scene, asked.id, "yes", "person:ann")
        assert answered.status == 200, answered.text
        turn = await scene.turn(thread, 1)
        assert turn["outcome"] == "replied", turn
        assert await scene.said_by(thread, "role:fake") == ["rm: yes"]
        [told] = scene.journal("permission")
        assert told["chosen"] == "yes"  # the agent's own option id, as it offered it
        assert _permission_step(turn) == (
            f"rm: asked the people (approval {asked.id}): answered 'Allow' by person:ann (api)"
        )
        # what the policy allows or refuses outright is not asked
        await scene.api.say(thread, "person:ann", "ask cat read")
        second = await scene.turn(thread, 2)
        assert _permission_step(second) == "cat: allowed by the role's permissions"
        events = (await scene.api.timeline(thread))["events"]
        assert [e["kind"] for e in events].count("approval_requested") == 1


async def test_an_expiry_reaches_the_agent_as_a_refusal(tmp_path: Path) -> None:
    role = fake(permissions="ask", approvals={"expires_in": 1})
    async with serving(tmp_path, role) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "ask rm execute")
        turn = await scene.turn(thread, 1)  # nobody answers: it expires
        [asked] = await _asked(scene, thread)  # (pending or not: it may be past by now)
        assert (asked.expires_at - asked.at).total_seconds() <= 1.5
        assert await scene.said_by(thread, "role:fake") == ["rm: no"]
        assert _permission_step(turn).endswith(": expired unanswered")
        late = await _answer(scene, asked.id, "yes", "person:ann")
        assert late.status == 409 and late.body["error"]["code"] == "approval_closed"
        assert [e["chosen"] for e in scene.journal("permission")] == ["no"]


async def test_a_rejection_reaches_the_agent(tmp_path: Path) -> None:
    async with serving(tmp_path, fake(permissions="ask")) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "ask rm execute")
        [asked] = await _pending(scene, thread)
        refused = await _answer(scene, asked.id, "no", "person:ann")
        assert refused.status == 200, refused.text
        turn = await scene.turn(thread, 1)
        assert await scene.said_by(thread, "role:fake") == ["rm: no"]
        assert _permission_step(turn).endswith("answered 'Reject' by person:ann (api)")
        assert [e["chosen"] for e in scene.journal("permission")] == ["no"]


async def test_the_manifests_approvers_answer_and_nobody_else(tmp_path: Path) -> None:
    role = fake(permissions=ASK_EXECUTE, approvals={"approvers": ["person:boss"]})
    async with serving(tmp_path, role) as scene:
        # a conversation the approver is not in: nobody may be asked, the call is refused
        alone = await scene.conversation("person:ann", "fake")
        await scene.api.say(alone, "person:ann", "ask rm execute")
        turn = await scene.turn(alone, 1)
        assert await scene.said_by(alone, "role:fake") == ["rm: no"]
        assert _permission_step(turn) == (
            "rm: refused: none of the role's approvers (person:boss) is a person of this "
            "conversation"
        )

        shared = (await scene.api.thread("person:ann", "person:boss", "role:fake"))["id"]
        await scene.api.say(shared, "person:ann", "ask rm execute")
        [asked] = await _pending(scene, shared)
        assert asked.approvers == ("person:boss",)
        refused = await _answer(scene, asked.id, "yes", "person:ann")
        assert refused.status == 403 and refused.body["error"]["code"] == "not_an_approver"
        answered = await _answer(scene, asked.id, "always", "person:boss")
        assert answered.status == 200, answered.text
        await scene.turn(shared, 1)
        assert await scene.said_by(shared, "role:fake") == ["rm: always"]


async def test_a_turn_waiting_for_an_answer_holds_no_slot(tmp_path: Path) -> None:
    role = fake(permissions=ASK_EXECUTE, max_concurrent_turns=1)
    async with serving(tmp_path, role) as scene:
        waiting = await scene.conversation("person:ann", "fake")
        await scene.api.say(waiting, "person:ann", "ask rm execute")
        [asked] = await _pending(scene, waiting)
        # the role runs one turn at a time, and one waits for Ann: Bob is answered all the same
        other = await scene.conversation("person:bob", "fake")
        await scene.api.say(other, "person:bob", "ask cat read")
        await scene.turn(other, 1)
        assert await scene.said_by(other, "role:fake") == ["cat: yes"]
        assert await scene.said_by(waiting, "role:fake") == []

        answered = await _answer(scene, asked.id, "yes", "person:ann")
        assert answered.status == 200, answered.text
        await scene.turn(waiting, 1)
        assert await scene.said_by(waiting, "role:fake") == ["rm: yes"]
        # and the slot was taken back: the role still runs one turn at a time, and runs them
        await scene.api.say(other, "person:bob", "ask ls read")
        await scene.turn(other, 2)


async def test_a_question_open_across_a_restart_is_answered_to_the_rerun_turn(
    tmp_path: Path,
) -> None:
    role = fake(permissions=ASK_EXECUTE, args=("--load",))
    async with serving(tmp_path, role) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "ask rm execute")
        [asked] = await _pending(scene, thread)
    # the gateway stopped while the turn waited: the question is still open
    async with serving(tmp_path, role) as scene:
        [still] = await _pending(scene, thread)
        assert still.id == asked.id
        await scene.journaled("permission_asked", count=2)  # the rerun turn's agent asked again
        answered = await _answer(scene, asked.id, "yes", "person:ann")
        assert answered.status == 200, answered.text
        turn = await scene.turn(thread, 1)
        assert turn["outcome"] == "replied", turn
        assert await scene.said_by(thread, "role:fake") == ["rm: yes"]
        events = (await scene.api.timeline(thread))["events"]
        kinds = [e["kind"] for e in events]
        assert kinds.count("approval_requested") == 1 and kinds.count("approval_resolved") == 1
