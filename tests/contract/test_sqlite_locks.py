"""SQLite: brief reads run on the event loop, but never wait there for a lock.

The loop's connections have no busy timeout: work that finds the file locked fails there at once
with "database is locked" and is done again in a reader thread, which waits for the lock
(`busy_timeout`) while the loop goes on. A plain read in WAL mode is hardly ever refused a lock,
so the work here takes one that another connection holds: the write lock.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

from sqlalchemy import Connection

from core.storage.database import open_database, upgrade_schema


async def test_brief_work_that_meets_a_lock_waits_for_it_off_the_event_loop(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rolecall.db"
    url = f"sqlite+aiosqlite:///{path}"
    await upgrade_schema(url)
    db = await open_database(url)
    where: list[str] = []

    def work(connection: Connection) -> int:
        where.append(threading.current_thread().name)
        # Takes the write lock (no row changes): refused at once while another connection has it.
        connection.exec_driver_sql("UPDATE stream_positions SET value = value WHERE 0 = 1")
        return int(connection.exec_driver_sql("SELECT count(*) FROM events").scalar_one())

    try:
        assert await db._reads.transact_brief(work) == 0
        assert where == [threading.current_thread().name]  # on the loop

        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        where.clear()
        brief = asyncio.ensure_future(db._reads.transact_brief(work))
        turns, started = 0, time.monotonic()
        while time.monotonic() - started < 0.3:
            await asyncio.sleep(0.01)
            turns += 1
        assert not brief.done(), "the work did not wait for the lock"
        assert turns >= 10, f"the event loop was blocked: {turns} turns in 0.3 s"
        other.execute("COMMIT")
        other.close()
        assert await asyncio.wait_for(brief, 10) == 0
        loop_thread = threading.current_thread().name
        assert where[0] == loop_thread and where[1].startswith("rolecall-reader"), where
    finally:
        await db.close()
