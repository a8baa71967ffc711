"""Ids for threads and events: UUIDv7 in hex.

Time-ordered, so new rows land at the right edge of the id index instead of all over it, and ids
sort by creation time across milliseconds; random below that, so replicas need no coordination.
"""

from __future__ import annotations

import os
import time


def new_id() -> str:
    """A UUIDv7 in hex: time-ordered, so new rows land at the end of the id index."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10))
    value = (millis & (2**48 - 1)) << 80 | rand
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    return f"{value:032x}"
