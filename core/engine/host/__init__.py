"""The run host: owns agent sessions and decides when a run is prompted.

`host.py` schedules (nudges, slots, per-run FIFO, idle sleep and wake, control, recovery);
`turn.py` runs one turn (prompt, stream, timeout, retries) and commits its end through the
conversation driver's rules (`core.model.runs.conversation`); `observer.py` is what the host reports
to metrics.
"""

from core.engine.host.host import RunHost
from core.engine.host.observer import HostObserver, NoObserver
from core.engine.host.turn import HostLimits

__all__ = ["HostLimits", "HostObserver", "NoObserver", "RunHost"]
