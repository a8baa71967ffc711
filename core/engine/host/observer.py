"""What the run host reports as it works (the gateway turns it into Prometheus metrics)."""

from __future__ import annotations

from typing import Protocol


class HostObserver(Protocol):
    def turn_started(self, role: str) -> None: ...

    def turn_finished(self, role: str, outcome: str, seconds: float) -> None: ...

    def attempt_failed(self, role: str) -> None: ...

    def queue_wait(self, role: str, seconds: float) -> None: ...

    def sessions(self, *, awake: int, asleep: int) -> None: ...

    def slots_in_use(self, count: int) -> None: ...


class NoObserver:
    def turn_started(self, role: str) -> None:
        pass

    def turn_finished(self, role: str, outcome: str, seconds: float) -> None:
        pass

    def attempt_failed(self, role: str) -> None:
        pass

    def queue_wait(self, role: str, seconds: float) -> None:
        pass

    def sessions(self, *, awake: int, asleep: int) -> None:
        pass

    def slots_in_use(self, count: int) -> None:
        pass
