"""The demo role's agent, with its tools: it remembers in memory, creates a task when asked and
watches it, and tells the person when the task's status changes."""

from __future__ import annotations

from core.model.participants import Address
from core.model.tasks import Actor, TaskChange, TaskId, TaskStatus
from tests.host.scene import MakeScene, role


async def test_the_concierge_creates_a_task_watches_it_and_tells_of_its_status(
    make_scene: MakeScene,
) -> None:
    async with make_scene([role("concierge")]) as scene:
        thread = await scene.conversation("person:ann", "role:concierge")
        await scene.say(thread, "person:ann", "Create a task: order six blue chairs")
        [answer] = await scene.replies(thread, "role:concierge", 1)
        assert answer == (
            'Hello, I\'m Concierge. I created the task "order six blue chairs" and will tell '
            "you when its status changes."
        )
        [task] = await scene.db.tasks.list()
        run = await scene.run_of(thread)
        assert await scene.db.subscriptions.of_run(run.id) == [task.id]
        _, history = await scene.db.tasks.get(task.id)
        assert history[0].actor.run_id == run.id  # made by the conversation's run

        bob = Actor.person(Address("person:bob"))
        await scene.db.tasks.comment(TaskId(task.id), "on it", bob)  # news, but no status
        await scene.db.tasks.update(TaskId(task.id), TaskChange(status=TaskStatus.DONE), bob)
        said = await scene.replies(thread, "role:concierge", 2)
        assert said[1] == 'The task "order six blue chairs" is now done.'
