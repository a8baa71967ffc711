"""The runtime kinds this gateway can back roles with, beyond the built-in agents: each built
with what it needs from the gateway's settings (secrets by the names manifests give, where the
conversations' directories are). `core.runtimes.registry.Runtimes` picks one per role by its
manifest's `runtime.kind`."""

from __future__ import annotations

from collections.abc import Mapping

from core.runtimes.a2a import A2aRuntime
from core.runtimes.acp import AcpRuntime
from core.runtimes.openai import ChatCompletionsRuntime
from core.runtimes.registry import RuntimeKind
from gateway.settings import Settings


def runtime_kinds(settings: Settings, secrets: Mapping[str, str]) -> dict[str, RuntimeKind]:
    """The runtimes by kind (`acp`, `a2a`, `openai`) available to this gateway's roles."""
    kinds: dict[str, RuntimeKind] = {}
    kinds["acp"] = AcpRuntime(var_dir=settings.var_dir, secrets=secrets)
    kinds["a2a"] = A2aRuntime(secrets)
    kinds["openai"] = ChatCompletionsRuntime(secrets)
    return kinds
