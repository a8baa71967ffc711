"""Runs on tasks: a task assigned to a role gets that role's task run; every change by someone
else wakes it with the task and the news; its answer is recorded as the run's comments — which
in turn wake the conversations watching the task, but not the task run itself."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, cast

from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.participants import Address
from core.model.runs.run import RunKind, Turn, TurnCause, TurnOutcome
from core.model.tasks import Actor, ActorKind, TaskChange, TaskEvent, TaskId, TaskStatus
from tests.host.scene import MakeScene, Scene, role
from tests.waiting import eventually

ANN = Actor.person(Address("person:ann"))


class Worker(BuiltinAgent):
    """On a task: answers with what it was told; in a conversation: echoes people."""

    prompts: ClassVar[list[Prompt]] = []

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        type(self).prompts.append(prompt)
        if prompt.task is not None:
            kinds = [e["kind"] for t in prompt.tasks for e in t["events"]]
            yield Reply(f"seen {', '.join(kinds)} on {prompt.task['title']}")
            return
        for event in prompt.news:
            if event.kind == "message":
                yield Reply(event.text or "")


def worker() -> type[Worker]:
    """A Worker class of the test's own, so that its `prompts` are the test's."""
    return cast(type[Worker], type("W", (Worker,), {"prompts": []}))


async def _comments(scene: Scene, task_id: TaskId) -> list[TaskEvent]:
    _, history = await scene.db.tasks.get(task_id)
    return [e for e in history if e.kind.value == "commented"]


async def _enough(scene: Scene, task_id: TaskId, count: int) -> list[TaskEvent] | None:
    found = await _comments(scene, task_id)
    return found if len(found) >= count else None


async def test_an_assigned_task_gets_a_task_run_whose_answers_are_comments(
    make_scene: MakeScene,
) -> None:
    agent = worker()
    async with make_scene([role("worker", agent="w")], agents={"w": agent}) as scene:
        task, _ = await scene.db.tasks.create(
            title="Order chairs", body="Six, blue.", assignee="worker", external=None, actor=ANN
        )
        [comment] = await eventually(lambda: _enough(scene, task.id, 1))
        assert comment.text == "seen created on Order chairs"
        assert comment.actor.kind is ActorKind.RUN and comment.actor.name == "role:worker"
        assert comment.actor.run_id is not None
        run = await scene.db.runs.get(comment.actor.run_id)
        assert run.kind is RunKind.TASK and run.task_id == task.id and run.thread_id is None
        first = agent.prompts[0]
        assert first.task is not None and first.task["body"] == "Six, blue."

        await scene.db.tasks.update(task.id, TaskChange(status=TaskStatus.IN_PROGRESS), ANN)
        await scene.db.tasks.comment(task.id, "any update?", ANN)

        async def told_both() -> str | None:
            # one turn with both changes, or one each: the run may read between the two commits
            found = await _comments(scene, task.id)
            told = " ".join(c.text or "" for c in found[1:] if c.actor.kind is ActorKind.RUN)
            return told if "updated" in told and "commented" in told else None

        await eventually(told_both)
        await scene.host.sleep_idle()
        turns = await scene.db.runs.turns(run.id)
        assert all(t.cause is TurnCause.NEWS for t in turns)
        assert all(t.outcome is TurnOutcome.REPLIED for t in turns)
        # Its own comments never woke it: every turn was told something someone else did.
        assert all(t.prompt["tasks"] for t in turns)


async def test_a_task_runs_comment_wakes_a_conversation_of_the_same_role(
    make_scene: MakeScene,
) -> None:
    agent = worker()
    async with make_scene([role("worker", agent="w")], agents={"w": agent}) as scene:
        thread = await scene.conversation("person:ann", "role:worker")
        await scene.say(thread, "person:ann", "hello")
        await scene.replies(thread, "role:worker", 1)
        conversation = await scene.run_of(thread)
        task, _ = await scene.db.tasks.create(title="Paint", body="", assignee=None,
                                              external=None, actor=ANN)  # fmt: skip
        await scene.db.subscriptions.subscribe(conversation.id, task.id)

        await scene.db.tasks.update(task.id, TaskChange(assignee="worker"), ANN)
        await eventually(lambda: _enough(scene, task.id, 1))  # the task run answered

        async def told_of_the_comment() -> list[Turn]:
            turns = await scene.db.runs.turns(conversation.id)
            return [t for t in turns if "commented" in _kinds(t.prompt)]

        [turn] = await eventually(told_of_the_comment)
        assert turn.cause is TurnCause.NEWS and turn.outcome is TurnOutcome.SILENT


def _kinds(prompt: Mapping[str, Any]) -> list[str]:
    return [e["kind"] for task in prompt.get("tasks", []) for e in task["events"]]


async def test_a_task_assigned_while_no_host_ran_is_worked_on_when_one_starts(
    make_scene: MakeScene,
) -> None:
    agent = worker()
    async with make_scene([role("worker", agent="w")], agents={"w": agent}, start=False) as scene:
        task, _ = await scene.db.tasks.create(title="Restock", body="", assignee="worker",
                                              external=None, actor=ANN)  # fmt: skip
        assert await scene.db.runs.tasks_with_news() == [(task.id, "worker")]
        await scene.host.start()
        [comment] = await eventually(lambda: _enough(scene, task.id, 1))
        assert comment.text == "seen created on Restock"
        await scene.host.sleep_idle()
        assert await scene.db.runs.tasks_with_news() == []  # its own comment is not news to it
