"""The task driver's rules: a run on a task assigned to a role.

A task run is nudged by every committed event of its task. Its driver reads the task and the
task's events past the run's task cursor; the events the run made itself (its own comments) are
not news to it. Any other event — the task created or changed, a comment — wakes one turn that
tells the agent the task as it is now and all the news as one digest. What the agent answers is
recorded on the task as the run's comments; an agent that answers nothing leaves no trace there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.model.runs.conversation import task_digest, task_summary
from core.model.runs.prompt import Prompt
from core.model.runs.run import RunId, TurnCause
from core.model.tasks import Task, TaskEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTurnPlan:
    task: Task
    news: Sequence[TaskEvent]
    wakes: bool
    task_cursor_from: int
    task_cursor_to: int
    cause: TurnCause = TurnCause.NEWS


def plan_task_turn(
    task: Task, events: Sequence[TaskEvent], *, run_id: RunId, cursor: int, read_to: int
) -> TaskTurnPlan:
    news = [e for e in events if e.actor.run_id != run_id]
    return TaskTurnPlan(
        task=task,
        news=news,
        wakes=bool(news),
        task_cursor_from=cursor,
        task_cursor_to=read_to,
    )


def task_prompt(
    plan: TaskTurnPlan, *, role: str, instructions: str, opening: bool, more: bool
) -> Prompt:
    return Prompt(
        role=role,
        instructions=instructions,
        news=(),
        pending=0,
        more=more,
        opening=opening,
        task={**task_summary(plan.task), "body": plan.task.body},
        tasks=task_digest([(plan.task, event) for event in plan.news]),
    )
