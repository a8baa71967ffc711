"""SQLite serves one process: a second `rolecall serve` on the same SQLite file is refused.

SQLite is the single-process embedded default; several gateways share a database only on
PostgreSQL, where the replicas coordinate through the database (docs/scale.md). Two `rolecall
serve` on one SQLite file would not know of each other, so the second is stopped at start,
before it writes anything, with one line that names the database and the process using it.

The claim is an exclusive, non-blocking `flock` on `<database file>.lock` beside the database,
which holds the claiming process's pid (for the message only: the lock, not the pid, decides).
It is held for the life of the process and never released by hand: the kernel releases it when
the process ends, however it ends (kill -9 included), so a restart after a crash is never
refused and there is no stale lock to clean up. The lock file itself stays behind, harmless.

Only `rolecall serve` claims the file. `rolecall db …`, and tests that build the app in process,
do not; SQLite's own locks keep their writes consistent. An in-memory SQLite database and
PostgreSQL need no claim.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from sqlalchemy.engine import make_url

from gateway.cli._shared import Failure

_HELD: dict[Path, int] = {}
"""The lock files this process holds, by resolved path, each with its open descriptor: kept
open (and so locked) until the process exits."""


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL; None for an in-memory one or another backend."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file::memory:"):
        return None
    return Path(database)


def claim_the_database(url: str) -> None:
    """On a SQLite file: hold its lock for the life of this process, or fail (one line, exit 1)
    when another process holds it. Anything else: nothing to do."""
    database = sqlite_file(url)
    if database is None:
        return
    lock = database.with_name(database.name + ".lock")
    if lock.resolve() in _HELD:
        return
    try:
        # The engine would create the directory a moment later; the lock must sit beside it.
        database.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise Failure(f"cannot create the lock file {lock}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(descriptor)
        os.close(descriptor)
        raise Failure(
            f"another rolecall serve is using {database}{holder}; SQLite serves one process "
            "— use PostgreSQL for several (docs/scale.md)"
        ) from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    _HELD[lock.resolve()] = descriptor


def _holder(descriptor: int) -> str:
    """` (pid N)` as the holder wrote it; empty while it has not yet (it locks, then writes)."""
    written = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
    return f" (pid {written})" if written.isdigit() else ""
