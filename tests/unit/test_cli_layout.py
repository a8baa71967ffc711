"""Each `rolecall` command module stands alone: it imports what the modules share
(`gateway.cli._shared`, `gateway.cli.client`) and never the entry point (`gateway.cli.main`,
which imports every command module) nor another command module.

Read from the source with `ast`, like tests/unit/test_layers.py: every import, at the top of a
module or inside a function, counts, and nothing is imported to check it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ROOT / "gateway" / "cli" / "commands"
COMMAND_MODULES = sorted(p for p in COMMANDS.glob("*.py") if p.name != "__init__.py")
FORBIDDEN = ("gateway.cli.main", "gateway.cli.commands")


def _imported(path: Path) -> Iterator[str]:
    """Every module one file imports; `from a import b` names `a.b` too (b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # A relative import inside commands/ is another command module or the package.
            module = node.module or ""
            if node.level:
                module = "gateway.cli.commands" + (f".{module}" if module else "")
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def _wrong(path: Path) -> list[str]:
    return [
        name
        for name in _imported(path)
        if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN)
    ]


def test_there_are_command_modules() -> None:
    assert {p.stem for p in COMMAND_MODULES} >= {"serve", "threads", "runs", "hooks"}


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: p.stem)
def test_a_command_module_imports_neither_main_nor_another_command_module(path: Path) -> None:
    assert _wrong(path) == []


@pytest.mark.parametrize(
    "source",
    [
        "from gateway.cli.main import PROG\n",
        "from gateway.cli import main\n",
        "def f() -> None:\n    from gateway.cli.commands.threads import show_command\n",
        "from gateway.cli.commands import runs\n",
        "import gateway.cli.commands.people\n",
        "from . import slack\n",
    ],
)
def test_the_check_sees_a_forbidden_import(tmp_path: Path, source: str) -> None:
    module = tmp_path / "leak.py"
    module.write_text(source)
    assert _wrong(module) != []
