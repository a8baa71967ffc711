"""Threads and timeline events as the JSON the API returns.

Every event: `{"id", "thread_id", "seq", "position", "at", "kind", …kind fields}` with `at` in
RFC 3339, UTC, with microseconds. The kind fields:

- `message`: `author`, `text`, `context` (`{kind, task?, originating_message?}` or null),
  `retracted`, `channel` (where it was written: `api`, `web`, `slack`…; null for agents),
  `in_reply_to` (for a role's message, the person's message it answers; null for a message on
  the role's own initiative, and for people's messages)
- `participant_state_changed`: `participant`, `from_state`, `to_state`
- `retraction`: `author`, `target` (the message's id), `reason` (or null)
- `system`: `text`

A thread: `{"id", "participants": [{"address", "state"}], "memory_policy": {"thread_only"},
"created_at"}`, participants in the set's canonical (sorted) order.
"""

from __future__ import annotations

from typing import Any

from core.model.threads import Thread
from core.model.timeline import AnyEvent, Message, Retraction, StateChange, SystemNote, rfc3339

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
    return common
