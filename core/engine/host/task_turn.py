"""A turn of a run on a task: what its driver tells the turn, and what becomes of its end.

The turn is told the task as it is now and its news as one digest
(`core.model.runs.task.task_prompt`). Nobody watches its replies being written (no activity, no
drafts). What the agent answers is recorded on the task as the run's comments, committed with
the run's task cursor (`finish_task_turn`); an answer of nothing leaves no trace there (the turn
is silent), nor does a turn that failed or was cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.engine.host.drafts import DraftKind
from core.engine.runtimes.base import Prompt
from core.engine.tools import RunTools
from core.model.leases import Fence
from core.model.roles.role import Role
from core.model.roles.roster import Roster
from core.model.runs.run import Run, TurnCause, TurnOutcome
from core.model.runs.task import (
    TaskTurnEnd,
    TaskTurnPlan,
    end_of_task_turn,
    stopped_task_turn,
    task_prompt,
)
from core.storage.database import Database
from core.storage.runs_reads import TaskTurnInput
from core.storage.runs_store import TurnRecord


class TaskTurn:
    """One turn of a task run (`core.engine.host.turn.RunTurn`), made after its driver read
    `given` and planned `plan`."""

    def __init__(
        self,
        database: Database,
        role: Role,
        given: TaskTurnInput,
        plan: TaskTurnPlan,
        *,
        fence: Fence | None = None,
        roster: Roster,
    ) -> None:
        self._db = database
        self._plan = plan
        self._fence = fence
        self.run: Run = given.run
        self.cause: TurnCause = plan.cause
        self.prompt: Prompt = task_prompt(
            plan,
            role=role.name,
            instructions=role.instructions,
            opening=not given.run.session.opened,
            more=given.more,
        )
        self.tools = RunTools(database, given.run, read_to=0, roster=roster)

    def working(self, working: bool) -> None:
        pass  # nobody watches a task run work

    def draft(self, kind: DraftKind, text: str) -> None:
        pass  # nor its replies being written

    async def opening(self, prompt: Prompt) -> Prompt:
        return replace(prompt, opening=True)  # a task run's prompt carries its task anyway

    def cancelled(self) -> TaskTurnEnd:
        return stopped_task_turn(TurnOutcome.CANCELLED)

    def failed(self) -> TaskTurnEnd:
        return stopped_task_turn(TurnOutcome.FAILED)

    async def answered(self, replies: Sequence[str]) -> TaskTurnEnd:
        return end_of_task_turn(replies)

    async def commit(
        self,
        end: TaskTurnEnd,
        record: TurnRecord,
        session_state: Mapping[str, Any] | None,
        *,
        failed: bool,
    ) -> Run:
        return await self._db.runs.finish_task_turn(
            self.run,
            task_cursor_to=self._plan.task_cursor_to,
            comments=end.comments,
            record=record,
            session_state=session_state,
            failed=failed,
            fence=self._fence,
        )
