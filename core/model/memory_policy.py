"""A thread's memory policy: whether what an agent stores in the thread stays in it.

`thread_only` (default true) is stamped onto each memory entry when it is stored; changing the
policy affects only entries stored afterwards. Recall inside thread T returns entries of T, entries
with no thread, and entries whose `thread_only` is false — never another thread's private entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.model.errors import InvalidInput


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryPolicy:
    thread_only: bool = True

    @classmethod
    def parse(cls, raw: object) -> MemoryPolicy:
        if not isinstance(raw, dict) or set(raw) != {"thread_only"}:
            raise InvalidInput(
                'memory_policy must be {"thread_only": true|false}', code="invalid_memory_policy"
            )
        value = raw["thread_only"]
        if not isinstance(value, bool):
            raise InvalidInput(
                "memory_policy.thread_only must be true or false", code="invalid_memory_policy"
            )
        return cls(thread_only=value)

    def to_json(self) -> dict[str, bool]:
        return {"thread_only": self.thread_only}
