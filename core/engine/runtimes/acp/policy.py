"""How an ACP agent's permission requests are answered (pure): the role's policy
(`core.model.roles.permissions`) decides — allow, deny, or ask the people — and this module
reads the request and picks the agent's option for the decision.

- The call is named by its kind, its title, or the tool's own name where the agent gives one in
  the call's `_meta` (Claude's adapter: `{"claudeCode": {"toolName": "Bash"}}`; our tools come
  as `mcp__rolecall__send_message`).
- "Once" options are preferred to "always" ones: every request is asked of the policy anyway, and
  an "always" would outlive a change of the manifest. An agent that offers no option of the
  kind wanted is answered "cancelled", which ACP agents take as a refusal.
- Put to people, the agent's options are offered as they are (their names as the labels); the
  option a person chose goes back to the agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.approvals import MAX_OPTION_LABEL, ApprovalOption, OptionKind, option_id_for
from core.model.values import clean_text

_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")
_NAME_KEYS = ("toolName", "tool_name")


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


def choose(allowed: bool, options: Sequence[tuple[str, str]]) -> str | None:
    """The id of the option that says `allowed` (options as `(id, kind)`), once rather than
    always; None when the agent offers none."""
    for wanted in _ALLOW if allowed else _REJECT:
        for option_id, kind in options:
            if kind == wanted:
                return option_id
    return None


def offered(options: Sequence[tuple[str, str, str]]) -> dict[str, tuple[ApprovalOption, str]]:
    """The agent's options (`(id, name, kind)`) as an approval's, each with the agent's id it
    stands for. The approval's ids are made from the agent's (ours are short slugs, theirs any
    string), the same every time the same options are offered."""
    made: dict[str, tuple[ApprovalOption, str]] = {}
    for option_id, name, kind in options:
        ours = option_id_for(option_id, set(made))
        label = (clean_text(name).strip() or option_id)[:MAX_OPTION_LABEL]
        known = kind in set(OptionKind) and kind != OptionKind.CHOICE
        option = ApprovalOption(
            id=ours, label=label, kind=OptionKind(kind) if known else OptionKind.CHOICE
        )
        made[ours] = (option, option_id)
    return made
