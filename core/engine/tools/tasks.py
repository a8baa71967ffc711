"""The task tools: `task_create`, `task_get`, `task_list`, `task_comment`, `task_update`.
Every change is recorded as made by this run (`{"kind": "run", "name": "role:…", "run_id"}`);
a task is shown as the tasks API shows it (`Task.to_json`)."""

from __future__ import annotations

from typing import Annotated, Any

from core.engine.tools.base import READS, Arg, Effects, tool
from core.engine.tools.context import ToolContext
from core.engine.tools.results import TASK, TASK_CHANGED, TASK_EVENT, TASK_WITH_HISTORY, listing
from core.model.tasks import (
    MAX_BODY,
    MAX_COMMENT,
    MAX_TITLE,
    Actor,
    ActorKind,
    TaskChange,
    TaskId,
    TaskStatus,
    check_body,
    check_comment,
    check_title,
    parse_assignee,
    parse_status,
)

_STATUSES = tuple(s.value for s in TaskStatus)
_TASK_ID = Arg(doc="the task's id")
_TITLE = Arg(doc=f"a short title, up to {MAX_TITLE} characters")
_BODY = Arg(doc=f"what it is about, up to {MAX_BODY:,} characters")
_ASSIGNEE = "a role this gateway serves, by its name or `role:<name>`"


class TaskTools(ToolContext):
    @property
    def _actor(self) -> Actor:
        return Actor(kind=ActorKind.RUN, name=self._run.role_address, run_id=self._run.id)

    @tool(
        description="Create a task (a tracked work item people see). `assignee`: a role.",
        result="the [task](#tasks), as the tasks API shows it",
        output=TASK,
        effects=Effects(),
    )
    async def task_create(
        self,
        title: Annotated[str, _TITLE],
        *,
        body: Annotated[str | None, _BODY] = None,
        assignee: Annotated[str | None, Arg(doc=f"who works on it: {_ASSIGNEE}")] = None,
    ) -> dict[str, Any]:
        task, _ = await self._db.tasks.create(
            title=check_title(title),
            body=check_body(body),
            assignee=self._roster.assignee(assignee),
            external=None,
            actor=self._actor,
        )
        return task.to_json()

    @tool(
        description="A task and its history (who changed what, comments).",
        result='the task plus `"history"`: its task events',
        output=TASK_WITH_HISTORY,
        effects=READS,
    )
    async def task_get(self, task_id: Annotated[str, _TASK_ID]) -> dict[str, Any]:
        task, events = await self._db.tasks.get(str(task_id))
        return {**task.to_json(), "history": [e.to_json() for e in events]}

    @tool(
        description="Tasks, oldest first, by status and assignee role.",
        result='`{"tasks": [task, …]}`, oldest first, at most 100',
        answer=lambda tasks: {"tasks": tasks},
        output=listing("tasks", TASK, "oldest first, at most 100"),
        effects=READS,
    )
    async def task_list(
        self,
        *,
        status: Annotated[
            str | None, Arg(doc="only tasks with this status", choices=_STATUSES)
        ] = None,
        assignee: Annotated[
            str | None, Arg(doc="only tasks assigned to this role, by its name or `role:<name>`")
        ] = None,
    ) -> list[dict[str, Any]]:
        found = await self._db.tasks.list(
            status=parse_status(status) if status is not None else None,
            assignee=parse_assignee(assignee),
            limit=100,
        )
        return [t.to_json() for t in found]

    @tool(
        description="Comment on a task.",
        result="the `commented` event",
        output=TASK_EVENT,
        effects=Effects(),
    )
    async def task_comment(
        self,
        task_id: Annotated[str, _TASK_ID],
        text: Annotated[str, Arg(doc=f"the comment, up to {MAX_COMMENT:,} characters")],
    ) -> dict[str, Any]:
        event = await self._db.tasks.comment(TaskId(str(task_id)), check_comment(text), self._actor)
        return event.to_json()

    @tool(
        description="Change a task's status, title, body or assignee (null: unassign).",
        result='the task plus `"changed"`',
        output=TASK_CHANGED,
        effects=Effects(idempotent=True),
    )
    async def task_update(
        self,
        task_id: Annotated[str, _TASK_ID],
        *,
        status: Annotated[
            str | None,
            Arg(
                doc="the new status: open → in_progress, done or cancelled; in_progress → "
                "open, done or cancelled; done or cancelled → open",
                choices=_STATUSES,
            ),
        ] = None,
        title: Annotated[str | None, _TITLE] = None,
        body: Annotated[str | None, _BODY] = None,
        assignee: Annotated[
            str | None,
            Arg(
                doc=f'{_ASSIGNEE}; null or "": unassign; left out: unchanged',
                nullable=True,
                null="",
            ),
        ] = None,
    ) -> dict[str, Any]:
        change = TaskChange(
            title=check_title(title) if title is not None else None,
            body=check_body(body) if body is not None else None,
            status=parse_status(status) if status is not None else None,
            assignee=(self._roster.assignee(assignee) or "") if assignee is not None else None,
        )
        task, event = await self._db.tasks.update(TaskId(str(task_id)), change, self._actor)
        return {**task.to_json(), "changed": event is not None}
