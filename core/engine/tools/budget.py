"""The tool calls one turn may make (the role's `max_tool_calls_per_turn`).

One budget is counted across every way the run's tools are reached — in process,
`POST /api/v1/tools/{name}` and MCP — since each of those builds its `RunTools` with the running
turn's budget. A call past the limit is refused with `LimitReached` (`tool_budget_spent`) before
it does anything; the refusals are counted for the turn's transcript.

Where a budget is counted is the host's `ToolBudgets`, one of:

- `LocalBudgets` (SQLite: one process runs every turn and serves every tool call): a
  `ToolBudget` in this process's memory, opened for each attempt; the tool surfaces reach it
  through the host (`RunHost.tool_budget`). Nothing is written.
- `SharedBudgets` (PostgreSQL: replicas behind a load balancer, so an agent's HTTP or MCP call
  may land on a replica that does not run its turn): a `SharedBudget`, the run's row in
  `tool_budgets` (`core.storage.budgets_store`). The owner opens it under a new attempt id and
  closes it when the attempt ends; any replica finds it by the run's id alone (`find`, no read)
  and spends from it with one writer command per call; the owner reads the refusals at the end.

A call made while no attempt runs (an operator's token used by hand between turns) is not
counted: the host has no budget then (`LocalBudgets`), or the run has no row (`SharedBudgets`).
"""

from __future__ import annotations

import logging
from typing import Protocol

from core.model.errors import LimitReached
from core.storage.budgets_store import SqlToolBudgets
from core.storage.database import Database
from core.storage.ids import new_id

log = logging.getLogger("rolecall.host")


def _spent(limit: int, name: str) -> LimitReached:
    return LimitReached(
        f"this turn has made the {limit} tool calls its role allows "
        f"(max_tool_calls_per_turn); {name} was not run — answer with what you have",
        code="tool_budget_spent",
    )


class ToolBudget:
    """A turn's budget counted in this process: `used` and `refused` are the whole truth."""

    __slots__ = ("limit", "refused", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.refused = 0

    async def spend(self, name: str) -> None:
        """Count one call of the tool `name`; `LimitReached` (counted) when none is left."""
        if self.used >= self.limit:
            self.refused += 1
            raise _spent(self.limit, name)
        self.used += 1

    async def refusals(self) -> int:
        """The calls refused so far (what the turn's transcript notes at the attempt's end)."""
        return self.refused


class SharedBudget(ToolBudget):
    """A run's budget in the database: `limit`, `used` and `refused` are as this process last
    saw them; the row is the truth. `attempt`: the attempt it was opened for (the owner's), or
    None (a tool surface's: whichever attempt runs now)."""

    __slots__ = ("_store", "attempt", "run_id")

    def __init__(
        self, store: SqlToolBudgets, run_id: str, *, attempt: str | None = None, limit: int = 0
    ) -> None:
        super().__init__(limit)
        self._store = store
        self.run_id = run_id
        self.attempt = attempt

    async def spend(self, name: str) -> None:
        spent = await self._store.spend(self.run_id)
        if spent is None:  # no attempt runs now: the call is not counted
            return
        budget = spent.budget
        self.limit, self.used, self.refused = budget.allowed, budget.used, budget.refused
        if not spent.granted:
            raise _spent(budget.allowed, name)

    async def refusals(self) -> int:
        budget = await self._store.read(self.run_id)
        if budget is not None and budget.attempt == self.attempt:
            self.limit, self.used, self.refused = budget.allowed, budget.used, budget.refused
        return self.refused


class ToolBudgets(Protocol):
    """Where the host counts its turns' tool calls."""

    async def open(self, run_id: str, limit: int) -> ToolBudget:
        """A budget of `limit` calls for the attempt beginning now (the previous one's ends)."""
        ...

    async def close(self, budget: ToolBudget) -> None:
        """The attempt `open` gave `budget` for has ended."""
        ...

    def find(self, run_id: str) -> ToolBudget | None:
        """The budget of the run's running attempt, for a tool surface of a process that does
        not run it (None: such calls are not counted)."""
        ...


class LocalBudgets:
    """Budgets in this process's memory (SQLite: one process)."""

    async def open(self, run_id: str, limit: int) -> ToolBudget:
        return ToolBudget(limit)

    async def close(self, budget: ToolBudget) -> None:
        pass

    def find(self, run_id: str) -> ToolBudget | None:
        return None  # every call reaches the process that runs the turn


class SharedBudgets:
    """Budgets in the database, shared by every replica (PostgreSQL)."""

    def __init__(self, database: Database) -> None:
        self._store = database.budgets

    async def open(self, run_id: str, limit: int) -> ToolBudget:
        attempt = new_id()
        await self._store.open(run_id, attempt, limit)
        return SharedBudget(self._store, run_id, attempt=attempt, limit=limit)

    async def close(self, budget: ToolBudget) -> None:
        if not isinstance(budget, SharedBudget) or budget.attempt is None:
            return
        try:
            await self._store.close(budget.run_id, budget.attempt)
        except Exception as error:  # the next attempt's open writes the row afresh
            log.warning("run %s: its tool budget was not closed: %s", budget.run_id, error)

    def find(self, run_id: str) -> ToolBudget | None:
        return SharedBudget(self._store, run_id)
