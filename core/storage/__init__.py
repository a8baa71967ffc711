"""Storage: the thread repository on SQLite or PostgreSQL, its schema and its migrations.

`open_database(url)` gives a `Database` whose `threads` is the `ThreadRepository`. Every write goes
through one writer that commits in batches (group commit); reads go straight to the pool.
"""

from core.storage.database import Database, open_database
from core.storage.repository import EventPage, ThreadPage, ThreadRepository, TimelinePage

__all__ = [
    "Database",
    "EventPage",
    "ThreadPage",
    "ThreadRepository",
    "TimelinePage",
    "open_database",
]
