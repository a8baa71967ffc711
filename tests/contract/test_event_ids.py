"""Event and thread ids are UUIDv7: unique, ordered by creation time across milliseconds, and
increasing from one to the next within a process."""

from __future__ import annotations

import time
import uuid

from core.storage.ids import new_id


def test_ids_are_uuid_version_7() -> None:
    value = uuid.UUID(new_id())
    assert value.version == 7
    assert value.variant == uuid.RFC_4122


def test_ids_are_unique_and_ordered_across_milliseconds() -> None:
    earlier = [new_id() for _ in range(1_000)]
    time.sleep(0.002)
    later = new_id()
    assert len(set(earlier)) == len(earlier)
    assert all(later > e for e in earlier)


def test_ids_made_one_after_another_increase_within_a_millisecond() -> None:
    made = [new_id() for _ in range(10_000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    assert len({i[:12] for i in made}) < len(made)  # some share a millisecond
    assert all(uuid.UUID(i).version == 7 and uuid.UUID(i).variant == uuid.RFC_4122 for i in made)
