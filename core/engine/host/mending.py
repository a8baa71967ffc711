"""Agent output made storable: what an agent says is mended, never refused.

Whatever the run host commits from an agent — its replies, the pieces of a reply it streams
(drafts, which channels show), its steps and tool calls (the transcript), its session state, the
errors it raises — must obey `core.model.values`' rule, or storage refuses it (a lone surrogate is
no UTF-8, PostgreSQL refuses a NUL, no backend holds 1e999 or 2^70). A person's input that breaks
the rule is refused at the edge; an agent's is mended with `core.model.values.clean_text` /
`clean_value` (lone surrogates become U+FFFD, NULs are dropped, numbers storage cannot hold
become null), so the turn still answers. Every mending is noted: `step()` is the transcript's
`Mended` step saying what was mended and why.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.engine.host.transcript import Mended
from core.model.values import clean_text, clean_value, text_problem


@dataclass(slots=True)
class Mending:
    """The mendings of one attempt (or one turn's end), in the order they were made."""

    notes: list[str] = field(default_factory=list)

    def text(self, text: str, where: str) -> str:
        """`text` made acceptable; a note says `where` it was and why, if it had to change."""
        problem = text_problem(text)
        if problem is None:
            return text
        self.notes.append(f"{where} {problem[1]}")
        return clean_text(text)

    def value(self, value: Any, where: str) -> Any:
        """`value` (JSON) made acceptable; noted as `text` notes."""
        mended, changed = clean_value(value)
        if changed:
            self.notes.append(f"{where} held text or numbers storage cannot hold")
        return mended

    def step(self) -> Mended | None:
        """The transcript's note of what was mended, or None when nothing was."""
        return Mended(notes=tuple(self.notes)) if self.notes else None
