"""Which of an agent's actions need a person's yes: a role's `permissions` policy (pure).

A policy answers, for one tool call an agent is about to make, one of three words:

- `allow`: it goes ahead;
- `deny`: it is refused;
- `ask`: the people of the conversation are asked, and it goes ahead only if one of them
  allows it (`core.model.approvals`; no answer in time is a refusal).

A policy is written in the manifest as one of those words (every call alike), as a list (the
calls it names are allowed, the rest refused — the first form there was), or as a mapping
whose first matching entry decides, in the order written; a call no entry matches is refused:

    permissions:
      "mcp__rolecall__*": allow
      read: allow
      execute: ask
      "*": ask                      # everything else: ask (without it: refused)

An entry names a call by its kind (ACP's `read`, `edit`, `delete`, `move`, `search`, `execute`,
`think`, `fetch`, `switch_mode`, `other`), its title, or the tool's own name; entries may be
glob patterns (`mcp__rolecall__*`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Decision = Literal["allow", "deny", "ask"]
DECISIONS: tuple[Decision, ...] = ("allow", "deny", "ask")

Policy = Decision | tuple[str, ...] | Mapping[str, Decision]


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """The tool call an agent asks permission for, as far as a policy looks at it."""

    kind: str | None = None
    title: str | None = None
    names: tuple[str, ...] = ()
    """The tool's own names (an ACP agent's `_meta`, a model's function name)."""

    @property
    def described(self) -> str:
        return self.names[0] if self.names else self.title or self.kind or "a tool"

    @property
    def candidates(self) -> tuple[str, ...]:
        return tuple(c for c in (self.kind, self.title, *self.names) if c)


def _matches(entry: str, asked: Asked) -> bool:
    return any(fnmatch.fnmatchcase(candidate, entry) for candidate in asked.candidates)


def decide(policy: Policy, asked: Asked) -> Decision:
    """What `policy` says of the call `asked`."""
    if isinstance(policy, str):
        return policy
    if isinstance(policy, tuple):
        return "allow" if any(_matches(entry, asked) for entry in policy) else "deny"
    for entry, decision in policy.items():
        if _matches(entry, asked):
            return decision
    return "deny"


def asks_anyone(policy: Policy) -> bool:
    """Whether some call could be put to a person under `policy`."""
    if isinstance(policy, str):
        return policy == "ask"
    return not isinstance(policy, tuple) and "ask" in policy.values()
