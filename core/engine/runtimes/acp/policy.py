"""How an agent's permission requests are answered: by the role's manifest, never by a person
(pure).

- `permissions: allow` picks one of the agent's allow options, `deny` one of its reject options.
- A list allows only the tool calls it names and rejects the rest. An entry names a call by its
  kind (ACP's `read`, `edit`, `delete`, `move`, `search`, `execute`, `think`, `fetch`,
  `switch_mode`, `other`), by its title, or by the tool's own name where the agent gives one in
  the call's `_meta` (Claude's adapter: `{"claudeCode": {"toolName": "Bash"}}`; our tools come
  as `mcp__rolecall__send_message`). Entries may be glob patterns: `mcp__rolecall__*`.

"Once" options are preferred to "always" ones: every request is asked of the policy anyway, and
an "always" would outlive a change of the manifest. An agent that offers no option of the kind
wanted is answered "cancelled", which ACP agents take as a refusal.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Policy = Literal["allow", "deny"] | tuple[str, ...]

_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")
_NAME_KEYS = ("toolName", "tool_name")


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """The tool call an agent asks permission for, as far as the policy looks at it."""

    kind: str | None = None
    title: str | None = None
    names: tuple[str, ...] = ()
    """The tool's own names, from the call's `_meta`."""

    @property
    def described(self) -> str:
        return self.names[0] if self.names else self.title or self.kind or "a tool"


def names_in(meta: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Tool names an agent put in a call's `_meta`: `toolName` at the top or one level down
    (under the agent's own key)."""
    if not meta:
        return ()
    found = [meta.get(key) for key in _NAME_KEYS]
    for value in meta.values():
        if isinstance(value, Mapping):
            found.extend(value.get(key) for key in _NAME_KEYS)
    return tuple(dict.fromkeys(name for name in found if isinstance(name, str) and name))


def allows(policy: Policy, asked: Asked) -> bool:
    if policy == "allow":
        return True
    if policy == "deny":
        return False
    candidates = [c for c in (asked.kind, asked.title, *asked.names) if c]
    return any(fnmatch.fnmatchcase(c, entry) for entry in policy for c in candidates)


def choose(allowed: bool, options: Sequence[tuple[str, str]]) -> str | None:
    """The id of the option that says `allowed` (options as `(id, kind)`), once rather than
    always; None when the agent offers none."""
    for wanted in _ALLOW if allowed else _REJECT:
        for option_id, kind in options:
            if kind == wanted:
                return option_id
    return None
