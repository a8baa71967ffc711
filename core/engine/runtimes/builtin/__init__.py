"""Built-in agents: Python classes that run inside the gateway (the embedded default).

`echo` answers each new person message with exactly its text; `concierge` is the demo role's
agent. A manifest picks one with `runtime: {kind: builtin, agent: <name>, delay_ms: …}`.
"""

from core.engine.runtimes.builtin.agent import BuiltinAgent, BuiltinRuntime
from core.engine.runtimes.builtin.concierge import Concierge
from core.engine.runtimes.builtin.echo import Echo

AGENTS: dict[str, type[BuiltinAgent]] = {"echo": Echo, "concierge": Concierge}

__all__ = ["AGENTS", "BuiltinAgent", "BuiltinRuntime", "Concierge", "Echo"]
