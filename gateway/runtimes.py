"""The runtime kinds this gateway can back roles with, beyond the built-in agents: each built
with what it needs from the gateway's settings (secrets by the names manifests give, where the
conversations' directories are). `core.engine.runtimes.registry.Runtimes` picks one per role by its
manifest's `runtime.kind`.

Only the kinds the configured roles name are built, and each kind's module (with its protocol
SDK: `agent-client-protocol`, `a2a-sdk`) is imported only then: a gateway whose roles are all
built-in does not hold those libraries in memory."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from core.engine.runtimes.registry import RuntimeKind
from gateway.settings import Settings


def runtime_kinds(
    settings: Settings, secrets: Mapping[str, str], *, named: Collection[str]
) -> dict[str, RuntimeKind]:
    """The runtimes by kind (`acp`, `a2a`, `openai`) of those `named`, for this gateway's roles."""
    kinds: dict[str, RuntimeKind] = {}
    if "acp" in named:
        from core.engine.runtimes.acp import AcpRuntime

        kinds["acp"] = AcpRuntime(var_dir=settings.var_dir, secrets=secrets)
    if "a2a" in named:
        from core.engine.runtimes.a2a import A2aRuntime

        kinds["a2a"] = A2aRuntime(secrets)
    if "openai" in named:
        from core.engine.runtimes.openai import ChatCompletionsRuntime

        kinds["openai"] = ChatCompletionsRuntime(secrets)
    return kinds
