"""Runs: the unit of agent work, and the pure rules of the conversation driver.

`run.py` holds what a run is (its cursor, its sessions, its turns); `conversation.py` what the
conversation driver decides — whether news wakes a turn, what the turn is told, what becomes of
its end. The run host (`core.engine.host`) does the I/O around these rules.
"""

from core.model.runs.conversation import EndOfTurn, TurnPlan, end_of_turn, plan_turn
from core.model.runs.run import (
    Attempt,
    Run,
    RunId,
    RunKind,
    RunStatus,
    Session,
    SessionId,
    Turn,
    TurnCause,
    TurnOutcome,
)

__all__ = [
    "Attempt",
    "EndOfTurn",
    "Run",
    "RunId",
    "RunKind",
    "RunStatus",
    "Session",
    "SessionId",
    "Turn",
    "TurnCause",
    "TurnOutcome",
    "TurnPlan",
    "end_of_turn",
    "plan_turn",
]
