"""Remote agents over A2A (Agent2Agent): a role's session is an A2A context, a turn is one
message sent in it, and the state the agent's task ends in is how the turn ends.

- `runtime.py`: the runtime — reads the agent card, makes the client, holds the credentials.
- `session.py`: one session — the context and an open task kept in its state, cancel.
- `reading.py`: what a turn's events say (pure): the reply, its pieces, steps, the end.
- `render.py`: a turn's prompt as the message's text parts (pure).
"""

from core.engine.runtimes.a2a.runtime import A2aRuntime

__all__ = ["A2aRuntime"]
