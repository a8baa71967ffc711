"""Tool budgets in the database (`tool_budgets`): the tool calls a run's running attempt at a turn
may still make, counted by every replica its agent's calls land on (PostgreSQL).

A run has at most one budget row, its running attempt's:

- **Open** (`OpenBudget`, by the run's owner as an attempt begins): the row is (re)written under
  a new attempt id, `allowed` the role's `max_tool_calls_per_turn`, nothing used or refused.
  Opening again resets it, so each attempt has its calls afresh.
- **Spend** (`SpendOne`, one writer command per tool call, wherever it lands): the check reads
  the row `FOR UPDATE`, so spends from several replicas are counted one after another; the
  write adds one to `used` while `used < allowed`, else one to `refused`. A spend that finds no
  row (no attempt runs: a call between turns) counts nothing and is not refused.
- **Close** (`CloseBudget`, by the owner as the attempt ends): the row of that attempt goes; a
  close of an older attempt leaves a newer one alone.

The owner reads the row at the attempt's end (`SqlToolBudgets.read`) for the refusals its
transcript notes. Refusing is not an error of the command: a refused spend writes (`refused`),
so it is an answer (`Spent.granted` false) that the caller turns into its domain error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import Connection, delete, select, update

from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.engine import dialect_of
from core.storage.transact import Transactor
from core.storage.writer import Writer

_b = schema.tool_budgets


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """A run's budget row: its attempt's allowance, what was used and what was refused."""

    run_id: str
    attempt: str
    allowed: int
    used: int
    refused: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Spent:
    """What one spend did: `granted` (the call may run) or refused, and the budget after it."""

    granted: bool
    budget: Budget


def spend(budget: Budget) -> Spent:
    """The rule of one call: granted while calls are left, else refused and counted."""
    if budget.used < budget.allowed:
        return Spent(granted=True, budget=replace(budget, used=budget.used + 1))
    return Spent(granted=False, budget=replace(budget, refused=budget.refused + 1))


def read_budget(connection: Reads, run_id: str, *, lock: bool) -> Budget | None:
    statement = select(_b.c.attempt, _b.c.allowed, _b.c.used, _b.c.refused).where(
        _b.c.run_id == run_id
    )
    row = connection.execute(statement.with_for_update() if lock else statement).first()
    if row is None:
        return None
    return Budget(run_id=run_id, attempt=row[0], allowed=row[1], used=row[2], refused=row[3])


@dataclass(frozen=True, slots=True)
class OpenBudget(NoRuns):
    """(Re)write the run's budget for `attempt`: `allowed` calls, none used or refused."""

    run_id: str
    attempt: str
    allowed: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], Budget]:
        opened = Budget(
            run_id=self.run_id, attempt=self.attempt, allowed=self.allowed, used=0, refused=0
        )
        values = {"attempt": self.attempt, "allowed": self.allowed, "used": 0, "refused": 0}
        insert = dialect_of(batch.connection).insert(_b).values(run_id=self.run_id, **values)
        batch.connection.execute(
            insert.on_conflict_do_update(index_elements=["run_id"], set_=values)
        )
        return lambda: opened


@dataclass(frozen=True, slots=True)
class SpendOne(NoRuns):
    """One tool call of the run against its running attempt's budget; None when none runs."""

    run_id: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> Budget | None:
        return read_budget(batch.connection, self.run_id, lock=True)

    def write(self, batch: Batch, plan: Budget | None) -> Callable[[], Spent | None]:
        if plan is None:
            return lambda: None
        spent = spend(plan)
        after = spent.budget
        batch.connection.execute(
            update(_b)
            .where(_b.c.run_id == self.run_id)
            .values(used=after.used, refused=after.refused)
        )
        return lambda: spent


@dataclass(frozen=True, slots=True)
class CloseBudget(NoRuns):
    """Drop the run's budget if it is still `attempt`'s; whether it was."""

    run_id: str
    attempt: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        deleted = batch.connection.execute(
            delete(_b).where(_b.c.run_id == self.run_id, _b.c.attempt == self.attempt)
        ).rowcount
        return lambda: bool(deleted)


class SqlToolBudgets:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def open(self, run_id: str, attempt: str, allowed: int) -> Budget:
        return await self._writer.run(OpenBudget(run_id, attempt, allowed))

    async def spend(self, run_id: str) -> Spent | None:
        return await self._writer.run(SpendOne(run_id))

    async def close(self, run_id: str, attempt: str) -> bool:
        return await self._writer.run(CloseBudget(run_id, attempt))

    async def read(self, run_id: str) -> Budget | None:
        def work(connection: Connection) -> Budget | None:
            return read_budget(connection, run_id, lock=False)

        return await self._reads.transact(work)
