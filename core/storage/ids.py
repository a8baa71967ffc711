"""Ids for threads and events: UUIDv7 in hex, increasing within a process.

Time-ordered, so new rows land at the right edge of the id index instead of all over it, and ids
sort by creation time across milliseconds; random below that, so replicas need no coordination.

Within one process every id is greater than the one before, in the same millisecond too (the
"monotonic random" method of RFC 9562, section 6.2): the 74 bits below the time are random at
the first id of a millisecond and counted up by one for each further id in it, so that a listing
in id order is creation order for whatever one gateway made. The first value of a millisecond
leaves the counter's top bit clear, so a millisecond has room for 2**73 ids; should the clock
step back, the ids go on from the last one's time rather than sort before it.
"""

from __future__ import annotations

import os
import threading
import time

_RANDOM_BITS = 74
_lock = threading.Lock()
_last = (0, 0)
"""The time (ms) and the random bits of the id made last."""


def _fields() -> tuple[int, int]:
    """This id's time and random bits: greater, as a pair, than the last id's."""
    global _last
    millis = time.time_ns() // 1_000_000
    with _lock:
        last_millis, last_random = _last
        if millis > last_millis:
            random = int.from_bytes(os.urandom(10)) >> (80 - _RANDOM_BITS + 1)
        else:  # the same millisecond (or the clock stepped back): count on from the last id
            millis, random = last_millis, last_random + 1
            if random >> _RANDOM_BITS:
                millis, random = last_millis + 1, 0
        _last = (millis, random)
    return millis, random


def new_id() -> str:
    """A UUIDv7 in hex: time-ordered, so new rows land at the end of the id index."""
    millis, random = _fields()
    rand_a, rand_b = random >> 62, random & (2**62 - 1)
    value = (millis & (2**48 - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0x2 << 62 | rand_b
    return f"{value:032x}"
