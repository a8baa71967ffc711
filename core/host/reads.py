"""The driver's reads, gathered: runs that want to read in the same turn of the event loop share
one hop to a reader thread and one snapshot (`SqlRunRepository.turn_inputs`).

When a commit nudges many runs at once — a burst of messages, a task change with many watchers —
their drivers all ask to read within the same loop iteration; one read for all of them costs one
BEGIN/COMMIT and one thread hop instead of one each. A lone read waits no longer than one loop
iteration.
"""

from __future__ import annotations

import asyncio

from core.runs.run import Run
from core.storage.database import Database
from core.storage.run_reads import TurnInput


class TurnReads:
    def __init__(self, database: Database, *, limit: int, recent: int) -> None:
        self._db = database
        self._limit = limit
        self._recent = recent
        self._waiting: list[tuple[Run, bool, asyncio.Future[TurnInput]]] = []

    async def read(self, run: Run, *, with_tasks: bool) -> TurnInput:
        future: asyncio.Future[TurnInput] = asyncio.get_running_loop().create_future()
        if not self._waiting:
            asyncio.get_running_loop().call_soon(self._flush)
        self._waiting.append((run, with_tasks, future))
        return await future

    def _flush(self) -> None:
        waiting, self._waiting = self._waiting, []
        asyncio.get_running_loop().create_task(self._read(waiting))

    async def _read(self, waiting: list[tuple[Run, bool, asyncio.Future[TurnInput]]]) -> None:
        try:
            answers = await self._db.runs.turn_inputs(
                [(run, with_tasks) for run, with_tasks, _ in waiting],
                limit=self._limit,
                recent=self._recent,
            )
        except Exception as error:  # the whole read failed: every reader gets the error
            for _, _, future in waiting:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, _, future), answer in zip(waiting, answers, strict=True):
            if future.done():  # its reader went away (cancelled)
                continue
            if isinstance(answer, Exception):
                future.set_exception(answer)
            else:
                future.set_result(answer)
