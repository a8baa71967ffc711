"""The docs' table of the tools (docs/api.md, under `POST /api/v1/tools/{name}`), rendered from
their declarations; tests/unit/test_tool_docs.py fails when the file's table differs.

    python -m core.engine.tools.docs                 # print the table
    python -m core.engine.tools.docs docs/api.md     # write it over the table in that file
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.engine.tools.base import Tool
from core.engine.tools.run import TOOLS

HEADER = "| tool | arguments | result |"


def table(tools: Iterable[Tool]) -> str:
    """The markdown table: one row per tool, `name?` for an argument that may be left out."""
    rows = [HEADER, "| --- | --- | --- |"]
    rows.extend(f"| `{t.name}` | {_arguments(t)} | {_cell(t.result)} |" for t in tools)
    return "\n".join(rows) + "\n"


def _arguments(tool: Tool) -> str:
    required = set(tool.required)
    named = [
        f"`{name}{'' if name in required else '?'}`"
        + _notes(tool.input_schema["properties"][name], doc)
        for name, doc in tool.docs.items()
    ]
    return _cell(", ".join(named)) if named else "\N{EM DASH}"


def _notes(schema: Mapping[str, Any], doc: str) -> str:
    """` (1 to 100, default 10)` (with an en dash): the schema's range, then the argument's doc."""
    notes = [doc] if doc else []
    if "minimum" in schema and "maximum" in schema:
        notes.insert(0, f"{schema['minimum']}\N{EN DASH}{schema['maximum']}")
    return f" ({', '.join(notes)})" if notes else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table_in(markdown: str) -> str:
    """The tools' table as it stands in `markdown` (from its header to the first line that is not
    a row); empty when there is none."""
    lines = markdown.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == HEADER), None)
    if start is None:
        return ""
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "".join(lines[start:end])


def with_table(markdown: str, rendered: str) -> str:
    """`markdown` with its tools' table replaced by `rendered`."""
    current = table_in(markdown)
    if not current:
        raise ValueError(f"no table starting {HEADER!r}")
    return markdown.replace(current, rendered, 1)


def main(argv: list[str]) -> None:
    rendered = table(TOOLS.values())
    if not argv:
        sys.stdout.write(rendered)
        return
    path = Path(argv[0])
    path.write_text(with_table(path.read_text(encoding="utf-8"), rendered), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
