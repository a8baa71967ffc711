"""Storage's own error: the database cannot be reached for now.

A failure for a reason of the server's, not of the work asked of it (the server is restarting
or shutting down, the connection was lost, it has no connection left to give, it did not answer
in time) is raised as `StorageUnavailable`, whatever the driver called it. Nothing the caller
sent is wrong, and the same request may well succeed in a moment: the gateway answers 503 with
`Retry-After`, background workers try again later. Every other failure keeps its own type.

What a failed write left behind: a write whose transaction failed before its COMMIT was sent is
not stored. When the connection is lost while the COMMIT itself is on its way, the server may
have committed it or not, and no one can tell the caller which; its caller is told the storage
was unavailable either way.
"""

from __future__ import annotations

RETRY_AFTER_SECONDS = 2
"""How long a client is asked to wait before it tries again: a restart of PostgreSQL takes
about that long; a longer outage is met with another 503 and the same advice."""


class StorageUnavailable(Exception):
    """The database cannot be reached for now; try again in `retry_after` seconds."""

    def __init__(self, reason: str, *, retry_after: int = RETRY_AFTER_SECONDS) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
