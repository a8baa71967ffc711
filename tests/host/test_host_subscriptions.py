"""Task subscriptions wake conversations: a change to a watched task by anyone but the watching
run itself brings one turn with all the news as a digest; such a turn says nothing unless the
agent sends a message."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import ClassVar, cast

from core.engine.runtimes.base import Prompt, Reply, TurnTools, Update
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.participants import Address
from core.model.runs.run import Run, Turn, TurnCause, TurnOutcome
from core.model.tasks import Actor, ActorKind, Task, TaskChange, TaskStatus
from core.model.timeline import ThreadId
from tests.host.scene import MakeScene, Scene, role
from tests.waiting import eventually

ANN = Actor.person(Address("person:ann"))


class Watcher(BuiltinAgent):
    """Echoes people; on task news, says "<title> is now <status>" for each status change — or
    nothing at all when `quiet`."""

    prompts: ClassVar[list[Prompt]] = []
    quiet: ClassVar[bool] = False

    async def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        type(self).prompts.append(prompt)
        for event in prompt.news:
            if event.kind == "message" and (event.author or "").startswith("person:"):
                yield Reply(event.text or "")
        if type(self).quiet:
            return
        for task in prompt.tasks:
            for change in task["events"]:
                if "status" in change["changes"]:
                    await tools.send_message(f"{task['title']} is now {task['status']}")


def watcher(quiet: bool = False) -> type[Watcher]:
    """A Watcher class of the test's own, so that its `prompts` are the test's."""
    return cast(type[Watcher], type("W", (Watcher,), {"prompts": [], "quiet": quiet}))


async def _watching(
    scene: Scene, person: str, title: str = "Order chairs"
) -> tuple[ThreadId, Run, Task]:
    """A conversation of `person` with role:watch whose run subscribes to a new task."""
    thread = await scene.conversation(person, "role:watch")
    await scene.say(thread, person, "hello")
    await scene.replies(thread, "role:watch", 1)
    run = await scene.run_of(thread)
    task, _ = await scene.db.tasks.create(title=title, body="", assignee=None,
                                          external=None, actor=ANN)  # fmt: skip
    assert await scene.db.subscriptions.subscribe(run.id, task.id) is True
    return thread, run, task


async def test_a_change_by_a_person_wakes_the_subscribed_conversation(
    make_scene: MakeScene,
) -> None:
    agent = watcher()
    async with make_scene([role("watch", agent="w")], agents={"w": agent}) as scene:
        thread, run, task = await _watching(scene, "person:ann")
        await scene.db.tasks.update(task.id, TaskChange(status=TaskStatus.DONE), ANN)
        await scene.db.tasks.comment(task.id, "thanks!", ANN)

        said = await scene.replies(thread, "role:watch", 2)
        assert said[1] == "Order chairs is now done"
        turns = await eventually(lambda: _at_least(scene.db.runs.turns(run.id), 2))
        assert turns[1].cause is TurnCause.NEWS and turns[1].outcome is TurnOutcome.REPLIED
        [digest] = agent.prompts[1].tasks
        assert digest["id"] == task.id and digest["status"] == "done"
        assert digest["events"][0]["kind"] == "updated"
        # Every change is told once, in order, whichever turns carried them.
        told = await eventually(lambda: _told(agent, 2))
        assert told == ["updated", "commented"]


async def test_a_news_turn_says_nothing_unless_the_agent_sends_a_message(
    make_scene: MakeScene,
) -> None:
    agent = watcher(quiet=True)
    async with make_scene([role("watch", agent="w")], agents={"w": agent}) as scene:
        thread, run, task = await _watching(scene, "person:ann")
        await scene.db.tasks.comment(task.id, "any news?", ANN)

        turns = await eventually(lambda: _at_least(scene.db.runs.turns(run.id), 2))
        assert turns[-1].cause is TurnCause.NEWS and turns[-1].outcome is TurnOutcome.SILENT
        assert await scene.notes(thread) == []
        assert await scene.said_by(thread, "role:watch") == ["hello"]
        assert turns[-1].prompt["tasks"][0]["events"][0]["text"] == "any news?"


async def test_a_change_by_the_run_itself_does_not_wake_it_but_one_by_its_role_elsewhere_does(
    make_scene: MakeScene,
) -> None:
    agent = watcher()
    async with make_scene([role("watch", agent="w")], agents={"w": agent}) as scene:
        thread, run, task = await _watching(scene, "person:ann")
        itself = Actor(kind=ActorKind.RUN, name="role:watch", run_id=run.id)
        await scene.db.tasks.update(task.id, TaskChange(status=TaskStatus.IN_PROGRESS), itself)
        other_thread = await scene.conversation("person:bob", "role:watch")
        await scene.say(other_thread, "person:bob", "hi")
        other = await scene.run_of(other_thread)
        await scene.host.sleep_idle()
        assert len(await scene.db.runs.turns(run.id)) == 1  # its own change: no turn

        same_role = Actor(kind=itself.kind, name="role:watch", run_id=other.id)
        await scene.db.tasks.update(task.id, TaskChange(status=TaskStatus.DONE), same_role)
        said = await scene.replies(thread, "role:watch", 2)
        assert said[1] == "Order chairs is now done"
        [digest] = agent.prompts[-1].tasks
        assert [e["changes"]["status"]["to"] for e in digest["events"]] == ["done"]


async def test_task_news_left_from_before_a_restart_is_delivered_on_start(
    make_scene: MakeScene,
) -> None:
    agent = watcher()
    async with make_scene([role("watch", agent="w")], agents={"w": agent}) as scene:
        thread, _, task = await _watching(scene, "person:ann")
    async with make_scene([role("watch", agent="w")], agents={"w": agent}, start=False) as scene:
        await scene.db.tasks.update(task.id, TaskChange(status=TaskStatus.DONE), ANN)
        await scene.host.start()
        said = await scene.replies(thread, "role:watch", 2)
        assert said[1] == "Order chairs is now done"


async def _told(agent: type[Watcher], count: int) -> list[str] | None:
    kinds = [e["kind"] for p in agent.prompts for t in p.tasks for e in t["events"]]
    return kinds if len(kinds) >= count else None


async def _at_least(turns_awaitable: Awaitable[list[Turn]], count: int) -> list[Turn] | None:
    turns = await turns_awaitable
    return turns if len(turns) >= count else None
