"""Storage: the thread repository on SQLite or PostgreSQL, its schema and its migrations.

`open_database(url)` gives a `Database` whose `threads` is the `ThreadRepository`. Every write goes
through one writer that commits in batches (group commit); reads go straight to the pool.
"""

from core.storage.database import Database, open_database
from core.storage.pages import EventPage, ThreadPage, TimelinePage
from core.storage.threads_store import ThreadRepository

__all__ = [
    "Database",
    "EventPage",
    "ThreadPage",
    "ThreadRepository",
    "TimelinePage",
    "open_database",
]
