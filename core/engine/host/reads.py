"""The driver's reads, gathered: runs that want to read in the same turn of the event loop share
one read and one snapshot (`SqlRunRepository.turn_inputs`).

When a commit nudges many runs at once — a burst of messages, a task change with many watchers —
their drivers all ask to read within the same loop iteration; one read for all of them costs one
BEGIN/COMMIT (on PostgreSQL, one connection from the pool) instead of one each. The first to ask
starts the read's task, which takes every read asked for by the time it first runs — one loop
iteration later — so a lone read waits no longer than that.
"""

from __future__ import annotations

import asyncio

from core.model.runs.run import Run
from core.storage.database import Database
from core.storage.runs_reads import TurnInput


class TurnReads:
    def __init__(self, database: Database, *, limit: int, recent: int) -> None:
        self._db = database
        self._limit = limit
        self._recent = recent
        self._waiting: list[tuple[Run, bool, asyncio.Future[TurnInput]]] = []
        self._reading: set[asyncio.Task[None]] = set()

    async def read(self, run: Run, *, with_tasks: bool) -> TurnInput:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[TurnInput] = loop.create_future()
        if not self._waiting:
            reading = loop.create_task(self._read())
            self._reading.add(reading)  # the loop itself keeps only a weak reference
            reading.add_done_callback(self._reading.discard)
        self._waiting.append((run, with_tasks, future))
        return await future

    async def _read(self) -> None:
        waiting, self._waiting = self._waiting, []
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
