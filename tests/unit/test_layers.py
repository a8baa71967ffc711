"""The layers point one way: core <- channels <- gateway.

`core/` imports neither `channels` nor `gateway`. `channels/` imports from `gateway` only the
modules named in `CHANNELS_STILL_IMPORT` — what is left to move below the channels (issue #17);
the list may only shrink. What every HTTP edge shares is in `channels/edge/`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHANNELS_STILL_IMPORT = frozenset(
    {
        "gateway.settings",
        "gateway.metrics",
        "gateway.roles",
        "gateway.slack_manifest",
        "gateway.api.serialize",
    }
)


def _imports(package: str) -> Iterator[tuple[str, str]]:
    """(file, imported module) for every absolute import in `package`'s Python files."""
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield str(path.relative_to(ROOT)), alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield str(path.relative_to(ROOT)), node.module


def _under(module: str, top: str) -> bool:
    return module == top or module.startswith(top + ".")


def test_core_imports_neither_channels_nor_the_gateway() -> None:
    upward = [
        (file, module)
        for file, module in _imports("core")
        if _under(module, "channels") or _under(module, "gateway")
    ]
    assert upward == []


def test_channels_import_from_the_gateway_only_what_is_left_to_move() -> None:
    upward = {(file, module) for file, module in _imports("channels") if _under(module, "gateway")}
    assert {module for _, module in upward} <= CHANNELS_STILL_IMPORT, sorted(upward)


def test_the_http_edge_kit_imports_no_channel_and_no_gateway() -> None:
    upward = [
        (file, module)
        for file, module in _imports("channels/edge")
        if _under(module, "gateway")
        or (_under(module, "channels") and not _under(module, "channels.edge"))
    ]
    assert upward == []
