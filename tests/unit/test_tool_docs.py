"""Each agent tool is declared once: its schema comes from its method's typed signature, and the
docs' table of the tools (docs/api.md) is the one rendered from the declarations."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest

from core.engine.tools import TOOLS
from core.engine.tools.base import Arg, declared
from core.engine.tools.docs import table, table_in, with_table
from core.model.errors import InvalidInput

API_DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_the_docs_table_of_the_tools_is_the_declared_one() -> None:
    assert table_in(API_DOCS.read_text(encoding="utf-8")) == table(TOOLS.values()), (
        "docs/api.md's table of the tools differs from their declarations (core/engine/tools/); "
        "regenerate it: make docs (.venv/bin/python -m core.engine.tools.docs docs/api.md)"
    )


def test_rewriting_the_table_changes_nothing_else() -> None:
    markdown = "# Tools\n\n| tool | arguments | result |\n| --- | --- | --- |\n| old |\n\nAfter.\n"
    rendered = table(TOOLS.values())
    assert with_table(markdown, rendered) == f"# Tools\n\n{rendered}\nAfter.\n"


async def _sample(
    tools: object,
    text: str,
    *,
    limit: Annotated[int | None, Arg(doc="default 5", minimum=1, maximum=9)] = None,
    where: Mapping[str, Any] | None = None,
    kind: Annotated[str | None, Arg(choices=("a", "b"), nullable=True)] = None,
) -> str:
    return text


def test_a_signature_declares_the_schema() -> None:
    sample = declared(_sample, description="A sample.", result="its text")
    assert sample.name == "_sample" and sample.required == ["text"]
    assert sample.input_schema == {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "limit": {"type": "integer", "description": "default 5", "minimum": 1, "maximum": 9},
            "where": {"type": "object"},
            "kind": {"type": ["string", "null"], "enum": ["a", "b"]},
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    assert table([sample]).splitlines()[2] == (
        "| `_sample` | `text`, `limit?` (1\N{EN DASH}9, default 5), `where?`, `kind?` | its text |"
    )


def test_arguments_are_checked_against_the_declaration() -> None:
    sample = declared(_sample, description="A sample.", result="its text")
    with pytest.raises(InvalidInput) as unknown:
        sample.check({"text": "hi", "thread": "t"})
    assert unknown.value.code == "unknown_argument"
    assert unknown.value.message == (
        "_sample has no argument 'thread'; it takes text, limit, where, kind"
    )
    with pytest.raises(InvalidInput) as missing:
        sample.check({"limit": 2})
    assert missing.value.code == "missing_argument"
    with pytest.raises(InvalidInput):
        sample.check({"text": "a\x00b"})  # what storage cannot keep, before the tool acts
