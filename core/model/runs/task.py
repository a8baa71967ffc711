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
from core.model.runs.run import RunId, TurnCause, TurnOutcome
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


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTurnEnd:
    """What a task run's turn leaves on its task: the run's comments."""

    comments: Sequence[str]
    outcome: TurnOutcome


def end_of_task_turn(replies: Sequence[str]) -> TaskTurnEnd:
    """What the agent answered becomes the run's comments on the task (blank ones dropped); an
    agent that answers nothing leaves no trace there (`silent`)."""
    comments = [text for text in replies if text.strip()]
    return TaskTurnEnd(
        comments=comments, outcome=TurnOutcome.REPLIED if comments else TurnOutcome.SILENT
    )


def stopped_task_turn(outcome: TurnOutcome) -> TaskTurnEnd:
    """A task turn that was cancelled or failed: nothing is recorded on the task."""
    return TaskTurnEnd(comments=(), outcome=outcome)
