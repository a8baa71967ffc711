"""Threads and timeline events as the JSON the API returns.

Every event: `{"id", "thread_id", "seq", "position", "at", "kind", …kind fields}` with `at` in
RFC 3339, UTC, with microseconds. The kind fields:

- `message`: `author`, `text`, `context` (`{kind, task?, originating_message?}` or null),
  `retracted`, `channel` (where it was written: `api`, `web`, `slack`…; null for agents),
  `in_reply_to` (for a role's message, the person's message it answers; null for a message on
  the role's own initiative, and for people's messages), `erased` (true for a tombstone: its
  `text` is empty and its `context` null, erased with a person)
- `participant_state_changed`: `participant`, `from_state`, `to_state`
- `retraction`: `author`, `target` (the message's id), `reason` (or null)
- `system`: `text`
- `approval_requested` (its `id` is the approval's): `author` (the role asking), `run_id`,
  `title`, `description` (or null), `options` (`[{id, label, kind}]`), `tool` (`{name,
  arguments}` or null), `approvers` (people's addresses; empty: the active people), `expires_at`
- `approval_resolved`: `target` (the request's id), `outcome` (`answered`, `expired`,
  `cancelled`), `option` (`{id, label, kind}` or null), `by` (who answered, or null), `channel`
  (where they answered, or null)
- `erased`: `participant` (the person erased), `messages` (how many of the thread's messages
  became tombstones)

A thread: `{"id", "participants": [{"address", "state"}], "memory_policy": {"thread_only"},
"created_at"}`, participants in the set's canonical (sorted) order.
"""

from __future__ import annotations

from typing import Any

from core.model.threads import Thread
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    Message,
    Retraction,
    StateChange,
    SystemNote,
    rfc3339,
)

JsonObject = dict[str, Any]


def thread_json(thread: Thread) -> JsonObject:
    return {
        "id": thread.id,
        "participants": [
            {"address": address, "state": state.value} for address, state in thread.participants
        ],
        "memory_policy": thread.memory_policy.to_json(),
        "created_at": rfc3339(thread.created_at),
    }


def event_json(event: AnyEvent) -> JsonObject:
    """One dict, built in one go: the common fields, then the kind's."""
    if isinstance(event, Message):
        context = event.context
        return {
            "id": event.id,
            "thread_id": event.thread_id,
            "seq": event.seq,
            "position": event.position,
            "at": rfc3339(event.at),
            "kind": event.kind.value,
            "author": event.author,
            "text": event.text,
            "context": context.to_json() if context is not None else None,
            "retracted": event.retracted,
            "channel": event.channel,
            "in_reply_to": event.in_reply_to,
            "erased": event.erased,
        }
    common: JsonObject = {
        "id": event.id,
        "thread_id": event.thread_id,
        "seq": event.seq,
        "position": event.position,
        "at": rfc3339(event.at),
        "kind": event.kind.value,
    }
    match event:
        case StateChange():
            common["participant"] = event.participant
            common["from_state"] = event.from_state.value
            common["to_state"] = event.to_state.value
        case Retraction():
            common["author"] = event.author
            common["target"] = event.target
            common["reason"] = event.reason
        case SystemNote():
            common["text"] = event.text
        case ApprovalRequested():
            common["author"] = event.author
            common["run_id"] = event.run_id
            common["title"] = event.title
            common["description"] = event.description
            common["options"] = [o.to_json() for o in event.options]
            common["tool"] = event.tool.to_json() if event.tool else None
            common["approvers"] = list(event.approvers)
            common["expires_at"] = rfc3339(event.expires_at)
        case Erased():
            common["participant"] = event.participant
            common["messages"] = event.messages
        case ApprovalResolved():
            common["target"] = event.target
            common["outcome"] = event.outcome.value
            common["option"] = event.option.to_json() if event.option else None
            common["by"] = event.by
            common["channel"] = event.channel
    return common


def approval_json(request: ApprovalRequested, resolution: ApprovalResolved | None) -> JsonObject:
    """An approval as the API shows it: the request's fields, its `state` (`pending`,
    `answered`, `expired`, `cancelled`) and its `resolution` (null while pending:
    `{id, at, outcome, option, by, channel}`)."""
    return {
        "id": request.id,
        "thread_id": request.thread_id,
        "seq": request.seq,
        "requested_at": rfc3339(request.at),
        "role": request.author,
        "run_id": request.run_id,
        "title": request.title,
        "description": request.description,
        "options": [o.to_json() for o in request.options],
        "tool": request.tool.to_json() if request.tool else None,
        "approvers": list(request.approvers),
        "expires_at": rfc3339(request.expires_at),
        "state": resolution.outcome.value if resolution else "pending",
        "resolution": None
        if resolution is None
        else {
            "id": resolution.id,
            "at": rfc3339(resolution.at),
            "outcome": resolution.outcome.value,
            "option": resolution.option.to_json() if resolution.option else None,
            "by": resolution.by,
            "channel": resolution.channel,
        },
    }
