"""The run repository on SQL: runs, their sessions and turns (see `core.model.runs`).

Writes are commands for the same group-commit writer as the timeline (`run_commands`), so the
end of a turn commits with the replies it posts; reads are functions over one snapshot
(`run_reads`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection

from core.model.leases import Fence
from core.model.participants import Address
from core.model.runs.run import Run, RunId, RunStatus, Turn
from core.model.runs.tokens import digest, new_token
from core.model.tasks import TaskId
from core.model.timeline import AnyEvent, EventId, ThreadId
from core.storage import runs_reads
from core.storage.pages import DEFAULT_PAGE, TimelinePage
from core.storage.positions import Heads, read_committed
from core.storage.runs_commands import (
    AdvanceCursor,
    EnsureConversationRun,
    EnsureTaskRun,
    FinishTaskTurn,
    FinishTurn,
    MintRunToken,
    RevokeRunToken,
    StartFreshSession,
    TurnEnd,
    TurnRecord,
)
from core.storage.runs_reads import TaskTurnInput, TurnInput
from core.storage.transact import Transactor
from core.storage.writer import Writer

__all__ = ["SqlRunRepository", "TurnEnd", "TurnInput", "TurnRecord"]


class SqlRunRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    # --- writes -----------------------------------------------------------------------------

    async def ensure_conversation_run(self, thread_id: ThreadId, role: str) -> tuple[Run, bool]:
        """The run of `role` in the thread, and whether this call created it."""
        return await self._writer.run(EnsureConversationRun(thread_id, role))

    async def ensure_task_run(self, task_id: TaskId, role: str) -> tuple[Run, bool]:
        """The run of `role` on the task, and whether this call created it."""
        return await self._writer.run(EnsureTaskRun(task_id, role))

    async def finish_task_turn(
        self,
        run: Run,
        *,
        task_cursor_to: int,
        comments: Sequence[str],
        record: TurnRecord,
        session_state: Mapping[str, Any] | None,
        failed: bool = False,
        fence: Fence | None = None,
    ) -> Run:
        """Commit the end of a task run's turn; the run as it now stands. `fence`: the host's
        claim on the run (replicas), without which the end is refused (`lease_lost`)."""
        assert run.task_id is not None
        end = await self._writer.run(
            FinishTaskTurn(
                run.id,
                TaskId(run.task_id),
                run.role,
                run.task_cursor,
                task_cursor_to,
                comments,
                record,
                session_state,
                failed,
                fence=fence,
            )
        )
        session = run.session
        if session_state is not None:
            session = replace(session, state=dict(session_state))
        return replace(
            run,
            task_cursor=task_cursor_to,
            turns=end.turn_number,
            status=end.status,
            failures=end.failures,
            last_error=end.last_error,
            session=session,
        )

    async def advance_task_cursor(
        self, run: Run, task_to: int, *, fence: Fence | None = None
    ) -> Run | None:
        """Move a task run's task cursor over its own events; None when it had moved on."""
        moved = await self._writer.run(
            AdvanceCursor(None, run.id, run.cursor, run.cursor, run.task_cursor, task_to, fence)
        )
        return replace(run, task_cursor=task_to) if moved else None

    async def advance_cursor(
        self, run: Run, to: int, task_to: int, *, fence: Fence | None = None
    ) -> Run | None:
        """Move the cursors of `run` (as the caller knew it) to `to` and `task_to`: the run as
        it now stands, or None when it had moved on meanwhile."""
        assert run.thread_id is not None
        moved = await self._writer.run(
            AdvanceCursor(run.thread_id, run.id, run.cursor, to, run.task_cursor, task_to, fence)
        )
        return replace(run, cursor=to, task_cursor=task_to) if moved else None

    async def set_back(self, run: Run, to: int) -> Run | None:
        """Set a conversation run's cursor back to `to` (an operator's retry: what lies after it
        is read again), if it is still where `run` has it: the run as it now stands, or None
        when it had moved on meanwhile. Not fenced: it is not the owner's write, and the owner's
        next write, expecting the old cursor, is dropped as superseded."""
        assert run.thread_id is not None
        moved = await self._writer.run(
            AdvanceCursor(run.thread_id, run.id, run.cursor, to, run.task_cursor, run.task_cursor)
        )
        return replace(run, cursor=to) if moved else None

    async def finish_turn(
        self,
        run: Run,
        *,
        cursor_to: int,
        task_cursor_to: int,
        messages: Sequence[str],
        notice: str | None,
        record: TurnRecord,
        session_state: Mapping[str, Any] | None,
        failed: bool = False,
        fence: Fence | None = None,
        in_reply_to: EventId | None = None,
    ) -> tuple[TurnEnd, Run]:
        """Commit the end of a turn of `run`; the answer, and the run as it now stands.
        `in_reply_to`: the person's message the turn's messages answer (None: initiative)."""
        assert run.thread_id is not None
        end = await self._writer.run(
            FinishTurn(
                run.thread_id,
                run.id,
                run.role,
                run.cursor,
                cursor_to,
                run.task_cursor,
                task_cursor_to,
                messages,
                notice,
                record,
                session_state,
                failed,
                fence,
                in_reply_to,
            )
        )
        session = run.session
        if session_state is not None:
            session = replace(session, state=dict(session_state))
        return end, replace(
            run,
            cursor=end.cursor,
            task_cursor=task_cursor_to,
            turns=end.turn_number,
            status=end.status,
            failures=end.failures,
            last_error=end.last_error,
            session=session,
        )

    async def start_fresh(self, run: Run) -> tuple[Run, AnyEvent]:
        assert run.thread_id is not None
        return await self._writer.run(StartFreshSession(run.thread_id, run.id))

    async def mint_token(self, run_id: RunId, *, session_id: str | None = None) -> str:
        """A new bearer token naming the run (only its digest is kept). One for an agent
        session (`session_id`) replaces the run's earlier session tokens."""
        token = new_token()
        await self._writer.run(MintRunToken(run_id, digest(token), session_id))
        return token

    async def revoke_token(self, token: str) -> None:
        """The token names no run any more (an agent session's, at the session's end)."""
        await self._writer.run(RevokeRunToken(digest(token)))

    # --- reads ------------------------------------------------------------------------------

    async def by_token(self, token: str) -> Run | None:
        """The run a token names, or None for a token that names none."""
        return await self._reads.transact(lambda c: runs_reads.run_by_token(c, digest(token)))

    async def get(self, run_id: str) -> Run:
        return await self._reads.transact(lambda c: runs_reads.run(c, run_id))

    async def of_thread(self, thread_id: ThreadId) -> list[Run]:
        return await self._reads.transact(lambda c: runs_reads.runs_of_thread(c, thread_id))

    async def of_task(self, task_id: str) -> list[Run]:
        return await self._reads.transact(lambda c: runs_reads.runs_of_task(c, task_id))

    async def of_role(
        self,
        role: str,
        *,
        after: str | None = None,
        limit: int = DEFAULT_PAGE,
        status: RunStatus | None = None,
    ) -> list[Run]:
        """The role's runs in id order, after `after`; only those of `status` when given."""
        return await self._reads.transact(
            lambda c: runs_reads.runs_of_role(c, role, after, limit, status)
        )

    async def turns(self, run_id: str, *, after: int = 0, limit: int = DEFAULT_PAGE) -> list[Turn]:
        return await self._reads.transact(lambda c: runs_reads.turns(c, run_id, after, limit))

    async def turn_inputs(
        self, requests: Sequence[tuple[Run, bool]], *, limit: int, recent: int
    ) -> list[TurnInput | Exception]:
        """The reads of many turns (`(run, with_tasks)` each) in one snapshot, a brief read (on
        SQLite it runs on the event loop); a read that fails answers its own request with its
        error."""

        def read_all(c: Connection, heads: Heads | None) -> list[TurnInput | Exception]:
            try:
                together = runs_reads.news_of_runs(c, [run for run, _ in requests], limit)
            except Exception as error:  # one statement read them all: its failure is theirs
                return [error for _ in requests]
            pages: Sequence[TimelinePage | None] = (
                [None] * len(requests) if together is None else together
            )
            answers: list[TurnInput | Exception] = []
            for (run, with_tasks), page in zip(requests, pages, strict=True):
                upto = heads.tasks if heads is not None and with_tasks else None
                try:
                    answers.append(runs_reads.turn_input(c, run, limit, recent, upto, page))
                except Exception as error:
                    answers.append(error)
            return answers

        if any(with_tasks for _, with_tasks in requests):  # task news: to the committed head
            return await read_committed(self._reads, read_all, brief=True)
        return await self._reads.transact_brief(lambda c: read_all(c, None))

    async def task_turn_input(self, run: Run, *, limit: int) -> TaskTurnInput:
        return await self._reads.transact(lambda c: runs_reads.task_turn_input(c, run, limit))

    async def tasks_with_news(self) -> Sequence[tuple[str, str]]:
        return await self._reads.transact(runs_reads.tasks_with_news)

    async def pending(
        self, thread_id: ThreadId, role: Address, *, after: int, limit: int
    ) -> TimelinePage:
        return await self._reads.transact(
            lambda c: runs_reads.pending(c, thread_id, role, after, limit)
        )

    async def conversations_with_news(self) -> Sequence[tuple[ThreadId, str]]:
        return await self._reads.transact(runs_reads.conversations_with_news)
