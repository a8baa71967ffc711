"""The run host: owns agent sessions and decides when a run is prompted.

`host.py` schedules (nudges, slots, per-run FIFO, idle sleep and wake, control, recovery);
`turn.py` runs one turn of any run (prompt, stream, timeout, retries, failures, committing its
end), `conversation_turn.py` and `task_turn.py` supply what differs per kind of run (what the
driver tells the turn, what becomes of its end: `core.model.runs.conversation`, `.task`);
`attempt.py` collects what one attempt does as the transcript's steps (`transcript.py`, typed,
made the stored JSON in one place), mended (`mending.py`); `sessions.py` holds agent sessions;
`observer.py` is what the host reports to metrics.
"""

from core.engine.host.host import RunHost
from core.engine.host.observer import HostObserver, NoObserver
from core.engine.host.turn import HostLimits

__all__ = ["HostLimits", "HostObserver", "NoObserver", "RunHost"]
