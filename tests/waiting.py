"""Waiting in tests for something the gateway does in the background: the one waiting helper.

A test never waits for a time. It waits for an event: `eventually(check)` polls `check` (sync
or async) until it gives something truthy and returns that. To assert that something did *not*
happen, a test first causes a later event that can only come after it (a second message's reply,
the next delivery, a marker through the same channel), waits for that with `eventually`, and only
then asserts the absence.

When the event does not come, the failure says what did not happen (`what`, or where the check
was written) and the last thing the check gave.
"""

from __future__ import annotations

import asyncio
import inspect
import linecache
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

WITHIN = 15.0
"""Long enough for a loaded CI machine; a passing test waits only as long as the event takes."""

_EVERY = 0.02


# Two overloads so that mypy finds `T` both for an async check (`T` is what its awaitable gives)
# and for a plain one; the one signature below, a union, leaves `T` unsolved for a coroutine.
@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]], *, what: str | None = None, within: float = WITHIN
) -> T: ...
@overload
async def eventually(
    check: Callable[[], T | None], *, what: str | None = None, within: float = WITHIN
) -> T: ...
async def eventually(
    check: Callable[[], Awaitable[T | None] | T | None],
    *,
    what: str | None = None,
    within: float = WITHIN,
) -> T:
    """What `check()` gives once it is truthy; fails the test, saying `what` did not happen,
    after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        got = check()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"never within {within}s: {what or _described(check)} (last: {got!r})"
            )
        await asyncio.sleep(_EVERY)


def _described(check: Callable[..., object]) -> str:
    """A check without a `what`, named by its function, or by where a lambda was written."""
    name = getattr(check, "__qualname__", repr(check))
    code = getattr(check, "__code__", None)
    if "<lambda>" in name and code is not None:
        line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
        return f"{line} ({code.co_filename}:{code.co_firstlineno})"
    return name
