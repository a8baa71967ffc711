"""The domain's one error family.

Every rule the core enforces fails with a subclass of `RolecallError`. Each carries a stable,
machine-readable `code` and a human message. Layers above translate the class, never the message:
the gateway maps it to an HTTP status in one middleware, the CLI prints the message and exits
non-zero, channels turn it into a polite reply.
"""

from __future__ import annotations


class RolecallError(Exception):
    """A domain rule was broken. `code` is stable; `message` is for people."""

    code: str = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidInput(RolecallError):
    """The input is malformed or breaks a validation rule (HTTP 422)."""

    code = "invalid"


class TooLarge(RolecallError):
    """The input exceeds a size limit (HTTP 413)."""

    code = "too_large"


class NotFound(RolecallError):
    """The named thing does not exist (HTTP 404)."""

    code = "not_found"


class Gone(NotFound):
    """The named thing existed and was erased: it will never be found again (HTTP 410)."""

    code = "gone"


class NotAllowed(RolecallError):
    """The actor may not do this (HTTP 403)."""

    code = "forbidden"


class Conflict(RolecallError):
    """The request contradicts the current state (HTTP 409)."""

    code = "conflict"


class LimitReached(RolecallError):
    """A limit on how much may be done at once or in one turn was reached (HTTP 429)."""

    code = "limit_reached"
