"""The layers point one way, and no module imports itself in a circle.

    core.model  <-  core.storage  <-  core.engine  <-  channels  <-  gateway

- `core.model` is pure: it imports nothing else of ours and no I/O library.
- `core.storage` does not import the engine; nothing in `core` imports a channel or the gateway.
- `channels.edge` (what every HTTP edge shares: app keys, `ApiError` and its translation, the
  request readers) imports only `core`; each channel imports `core`, `channels.edge` and itself,
  never another channel and never the gateway.
- Every first-party import, at the top of a module or inside a function, is an arrow of the
  module graph; the graph has no cycle.

These are read from the source with `ast`, so the check costs no import and cannot be fooled by
an import that happens not to run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "channels", "gateway")
CHANNELS = ("channels.slack", "channels.web", "channels.webhooks")

# What the pure model may import besides the standard library's pure parts and itself.
MODEL_MAY_USE = frozenset({"pydantic", "pydantic_core", "yaml"})
IO_MODULES = frozenset(
    {
        "aiohttp",
        "aiohttp_sse",
        "aiosqlite",
        "alembic",
        "asyncio",
        "asyncpg",
        "http",
        "mcp",
        "acp",
        "a2a",
        "socket",
        "sqlalchemy",
        "sqlite3",
        "slack_bolt",
        "slack_sdk",
        "subprocess",
        "urllib.request",
    }
)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(path: Path, modules: dict[str, Path] = MODULES) -> Iterator[str]:
    """Every absolute import in one file; `from a import b` names `a.b` when that is a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield submodule if submodule in modules else node.module


def _under(module: str, *tops: str) -> bool:
    return any(module == top or module.startswith(top + ".") for top in tops)


def _arrows(package: str, modules: dict[str, Path] = MODULES) -> list[tuple[str, str]]:
    return [
        (name, imported)
        for name, path in sorted(modules.items())
        if _under(name, package)
        for imported in _imports(path, modules)
    ]


def _channels_into_the_gateway(modules: dict[str, Path]) -> list[tuple[str, str]]:
    return [(n, i) for n, i in _arrows("channels", modules) if _under(i, "gateway")]


def test_the_model_is_pure() -> None:
    wrong = [
        (name, imported)
        for name, imported in _arrows("core.model")
        if (_under(imported, *PACKAGES) and not _under(imported, "core.model"))
        or _under(imported, *IO_MODULES)
    ]
    assert wrong == []


def test_the_model_uses_no_library_but_its_validators() -> None:
    stdlib = frozenset(__import__("sys").stdlib_module_names)
    foreign = {
        imported.split(".")[0]
        for _, imported in _arrows("core.model")
        if not _under(imported, "core.model")
    }
    assert foreign - stdlib <= MODEL_MAY_USE


def test_storage_does_not_import_the_engine() -> None:
    wrong = [(n, i) for n, i in _arrows("core.storage") if _under(i, "core.engine")]
    assert wrong == []


def test_core_imports_neither_channels_nor_the_gateway() -> None:
    wrong = [(n, i) for n, i in _arrows("core") if _under(i, "channels", "gateway")]
    assert wrong == []


def test_channels_import_nothing_of_the_gateway() -> None:
    assert _channels_into_the_gateway(MODULES) == []


def test_the_http_edge_kit_imports_only_core() -> None:
    wrong = [
        (n, i)
        for n, i in _arrows("channels.edge")
        if _under(i, "gateway") or (_under(i, "channels") and not _under(i, "channels.edge"))
    ]
    assert wrong == []


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_channel_imports_no_other_channel(channel: str) -> None:
    others = [c for c in CHANNELS if c != channel]
    wrong = [(n, i) for n, i in _arrows(channel) if _under(i, *others)]
    assert wrong == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _graph() -> dict[str, set[str]]:
    return {
        name: {imported for imported in _imports(path) if imported in MODULES and imported != name}
        for name, path in MODULES.items()
    }


def test_no_module_imports_itself_in_a_circle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_layers_check_fails_when_a_channel_imports_the_gateway(tmp_path: Path) -> None:
    """The same check over a small tree of its own: a channel module that imports the gateway
    (here inside a function, where no import runs at load) is found, and a clean tree is not."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "gateway" / "settings.py").write_text("class Settings: ...\n")
    channel = tmp_path / "channels" / "leak.py"
    channel.write_text("from core import model\n")
    assert _channels_into_the_gateway(_modules(tmp_path)) == []
    channel.write_text("def f() -> None:\n    from gateway.settings import Settings\n")
    assert _channels_into_the_gateway(_modules(tmp_path)) == [("channels.leak", "gateway.settings")]
