"""Storage: everything Rolecall keeps, on SQLite (the embedded default) or PostgreSQL.

`open_database(url)` gives a `Database` (`database.py`) whose repositories — `threads`, `runs`,
`people`, `memory`, `tasks`, `subscriptions`, `endpoints`, `slack`, `webhooks`,
`housekeeping` — are the one way the engine and the channels read and write. Every write is a
command handed to the one writer, which commits the commands waiting in one transaction (group
commit); every read runs in one snapshot.

The map:

- the writer: `writer.py` (the queue: batching, the quick way and the careful way, answering
  callers after commit), `batch.py` (the unit of work: thread and run states under lock, staged
  events, the `Command` protocol — `check` reads and refuses, `write` writes), `batch_sql.py`
  (the batch's statements);
- per aggregate, one scheme: `X_store.py` holds its repository (and, while small, its commands
  and reads); a large aggregate is split into `X_commands.py` (writer commands), `X_reads.py`
  (synchronous reads over one connection) and `X_store.py` (the repository over both) —
  `threads_*`, `runs_*`; `people_store.py` with `people_merge.py` (a merge's re-addressing
  inside the batch); `memory_store.py`, `tasks_store.py`, `subscriptions_store.py`,
  `endpoints_store.py`, `slack_store.py`, `webhooks_store.py`, `housekeeping_store.py`;
- what every aggregate shares: `pages.py` (what a cursor-based read returns), `rows.py` (rows to
  values: times as integer microseconds, events by kind), `statements.py` (hot-path statements
  run on the driver's own cursor), `ids.py` (UUIDv7);
- the database itself: `schema.py` (the tables), `migrations/` and `migrate.py` (Alembic),
  `engine.py` (SQLAlchemy engines), `transact.py` (a synchronous unit of work in one
  transaction, from async code), `errors.py` (`StorageUnavailable`, storage's one error);
- `bus.py`: the committed-event bus — after a commit it nudges listeners, which then read past
  their own cursors;
- several replicas on one PostgreSQL database: `notify.py` (LISTEN/NOTIFY on one dedicated
  connection per process, reconnected when it drops), `follow.py` (every replica's commits
  handed to this process's listeners in position order, once: local ones at once, the others'
  read after a notification, a safety poll or a reconnect).
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
