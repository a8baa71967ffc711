"""The audit trail: every operator action, who did it, when, from where, and what changed.

A **record** is written for each operator request that changed something and succeeded (2xx):
a request refused (4xx) or failed changed nothing and leaves none. It holds

- `actor`: the name of the operator token the request carried (`core.model.operators`);
- `client`: the address the request came from, as the gateway's edge sees it (the
  `X-Forwarded-For` of a trusted proxy, else the connection's peer);
- `action`: one of `ACTIONS` below, `noun.verb`;
- `detail`: a small JSON object: the ids of what was acted on and, where it was cheap to know,
  what it was before and after. Never message text, a token, a secret or a link code: the trail
  names things, it does not copy them;
- `at` and `position`: records are numbered in commit order (a counter updated inside the
  writing transaction, as the timeline's positions are), so a reader that resumes after a
  position never misses a record;
- `request_id`: the request's id, as on its access log line.

Records are never changed; the only way one goes is its age, past the trail's own retention
(`retention`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from core.model.errors import InvalidInput
from core.model.timeline import rfc3339
from core.model.values import check_value

ACTIONS: Mapping[str, str] = {
    "thread.resolve": "resolve a participant set to its thread (`created`: it is new)",
    "thread.memory_policy": "change a thread's memory policy",
    "message.post": "post a message in a thread as one of its participants (never the text)",
    "message.retract": "retract a message as its author",
    "participant.remove": "remove a member from a thread",
    "participant.readd": "make a removed member active again",
    "run.cancel": "stop a run's running turn",
    "run.start_fresh": "open a run's next session (start fresh)",
    "run.retry": "set a failed run's cursor back so that its last turn is taken again",
    "run.token_minted": "mint a run token for the agent tools (never the token)",
    "run.subscribe": "make a conversation's run watch a task or an external item",
    "task.create": "create a task as a person",
    "task.update": "change a task as a person",
    "task.comment": "comment on a task as a person",
    "approval.answer": "answer an approval as a person",
    "person.create": "create a person",
    "person.update": "change a person's display name or email (the fields, not the values)",
    "person.deactivate": "deactivate a person",
    "person.activate": "make a deactivated person active again",
    "person.link": "link a channel identity to a person",
    "person.link_code": "make a one-time link code for a person (never the code)",
    "person.merge": "a link code moved a person's last identity: they are merged into another",
    "person.erase": "erase a person's content and identities",
    "memory.redact": "redact an entry of a role's memory",
    "endpoint.create": "register an outbound webhook endpoint (never its secret)",
    "endpoint.replay": "deliver an endpoint's events again from a position; active again",
    "endpoint.delete": "delete an outbound webhook endpoint",
    "token.create": "make a named operator token (never the token)",
    "token.revoke": "revoke a named operator token",
    "console.sign_in": "sign in to the operator console with an operator token (never the token)",
    "console.sign_out": "sign out of the operator console",
}
"""Every action the trail records, by name, with what it is (docs/audit.md lists them)."""

MAX_CLIENT = 200
"""Characters of the client address kept (an `X-Forwarded-For` hop may be anything)."""


def check_action(action: str) -> str:
    if action not in ACTIONS:
        raise InvalidInput(
            f"{action!r} is not an action the audit trail records", code="invalid_action"
        )
    return action


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """What an operator did, as it is recorded (the trail gives it its position and time)."""

    actor: str
    client: str
    action: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    request_id: str | None = None

    def __post_init__(self) -> None:
        check_action(self.action)
        check_value(dict(self.detail), "detail")
        object.__setattr__(self, "client", self.client[:MAX_CLIENT])


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRecord:
    position: int
    at: datetime
    actor: str
    client: str
    action: str
    detail: Mapping[str, Any]
    request_id: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "at": rfc3339(self.at),
            "actor": self.actor,
            "client": self.client,
            "action": self.action,
            "detail": dict(self.detail),
            "request_id": self.request_id,
        }


def retention(days: float | None) -> timedelta | None:
    """How long a record is kept, from a number of days (None: forever)."""
    return None if days is None else timedelta(days=days)
