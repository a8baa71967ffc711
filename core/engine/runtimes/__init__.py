"""Runtimes: what backs a role. One interface (`base.py`) for every kind — built-in Python agents
now (`builtin/`), ACP agent processes, remote A2A agents and OpenAI-compatible models later."""

from core.engine.runtimes.base import (
    AgentError,
    AgentSession,
    Prompt,
    PromptEvent,
    Reply,
    Runtime,
    SessionSpec,
    Step,
    ToolCall,
    TurnTools,
    Update,
)

__all__ = [
    "AgentError",
    "AgentSession",
    "Prompt",
    "PromptEvent",
    "Reply",
    "Runtime",
    "SessionSpec",
    "Step",
    "ToolCall",
    "TurnTools",
    "Update",
]
