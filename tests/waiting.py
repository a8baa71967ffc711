"""Waiting in tests for something the gateway does in the background."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(check: Callable[[], Awaitable[T]], within: float = 15.0) -> T:
    """What `check()` gives once it is truthy; fails the test after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < deadline, "it did not happen in time"
        await asyncio.sleep(0.02)
