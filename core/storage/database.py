"""Opening the database: engine, schema upgrade, the group-commit writer and the repository."""

from __future__ import annotations

# Implementation lands with the SQL repository (see core/storage/sql_threads.py). The public shape:
#
#   db = await open_database(url, bus=CommittedEvents(), clock=utc_now,
#                            on_appended=lambda events: ...)
#   db.threads  -> ThreadRepository
#   db.bus      -> CommittedEvents
#   await db.close()
#
#   await upgrade_schema(url) -> the revision now in force
