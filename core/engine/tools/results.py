"""The JSON Schemas of what the tools answer (each tool's `output`, MCP's `outputSchema`).

Every answer is a JSON object, and its schema says which fields it always has, which it may
have, and their types. The schemas are open: a field added to an answer later does not make an
older client refuse it (the MCP client validates every structured result against its tool's
schema). tests/api/test_mcp_schemas.py calls every tool and holds each real answer to its schema
closed, so no field goes undeclared.

A task, a task event and an event as agents are told it are the shapes of `Task.to_json`,
`TaskEvent.to_json` (core/model/tasks.py) and `PromptEvent.to_json` (core/model/runs/prompt.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.model.tasks import ActorKind, TaskEventKind, TaskStatus

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
BOOLEAN: Schema = {"type": "boolean"}
TIME: Schema = {"type": "string", "format": "date-time"}
TRUE: Schema = {"type": "boolean", "const": True}


def described(schema: Schema, description: str) -> Schema:
    return {**schema, "description": description}


def nullable(schema: Schema) -> Schema:
    return {**schema, "type": [schema["type"], "null"]}


def obj(
    always: Mapping[str, Schema], maybe: Mapping[str, Schema] | None = None, **more: Any
) -> Schema:
    """An object with the fields it `always` has and those it `maybe` has."""
    return {
        "type": "object",
        "properties": {**always, **(maybe or {})},
        "required": list(always),
        **more,
    }


def listing(name: str, item: Schema, description: str) -> Schema:
    """`{name: [item, …]}`."""
    return obj({name: described({"type": "array", "items": item}, description)})


STORED = obj(
    {
        "id": described(STRING, "the memory entry's id"),
        "shared": described(
            BOOLEAN, "other conversations of the role may recall it (the memory policy)"
        ),
    }
)

MEMORY_ENTRY = obj(
    {
        "id": STRING,
        "at": TIME,
        "payload": described({"type": "object"}, "what was stored"),
        "here": described(BOOLEAN, "stored in this conversation"),
    }
)

MESSAGE_REF = obj({"id": described(STRING, "the event's id"), "seq": INTEGER})
"""`{"id", "seq"}` of an event just added to the conversation."""

EVENT = obj(
    {
        "kind": described(
            STRING,
            "message, participant_state_changed, retraction, system, approval_requested or "
            "approval_resolved (others may come)",
        ),
        "id": STRING,
        "seq": described(INTEGER, "its place in the conversation's timeline"),
        "at": TIME,
    },
    {
        "author": STRING,
        "text": described(
            STRING,
            "a message's text, a retraction's reason, a system note, a question asked, how "
            "a question was resolved",
        ),
        "participant": described(STRING, "whose state changed"),
        "state": described(STRING, "active or removed"),
        "target_seq": described(INTEGER, "the retracted message's or the question's seq"),
        "retracted": described(TRUE, "the message was retracted since"),
    },
    description="an event as agents are told it",
)

EXTERNAL = obj({"source": STRING, "key": STRING}, {"url": STRING})

TASK_FIELDS: Mapping[str, Schema] = {
    "id": STRING,
    "title": STRING,
    "body": STRING,
    "status": {"type": "string", "enum": [s.value for s in TaskStatus]},
    "assignee": described(nullable(STRING), "a role's name, or null for nobody"),
    "external": described(nullable(EXTERNAL), "the item of another system it follows, or null"),
    "created_at": TIME,
    "updated_at": TIME,
    "events": described(INTEGER, "how many task events it has"),
}

TASK = obj(TASK_FIELDS)

TASK_EVENT = obj(
    {
        "id": STRING,
        "task_id": STRING,
        "seq": INTEGER,
        "position": INTEGER,
        "at": TIME,
        "kind": {"type": "string", "enum": [k.value for k in TaskEventKind]},
        "actor": obj(
            {"kind": {"type": "string", "enum": [k.value for k in ActorKind]}, "name": STRING},
            {"run_id": described(STRING, "the run, for a change made by an agent")},
        ),
        "changes": described(
            {"type": "object"},
            'created: the task\'s fields; updated: {field: {"from", "to"}}; commented: {}',
        ),
        "text": described(nullable(STRING), "a comment's text"),
    }
)

TASK_WITH_HISTORY = obj(
    {**TASK_FIELDS, "history": {"type": "array", "items": TASK_EVENT}},
)

TASK_CHANGED = obj(
    {**TASK_FIELDS, "changed": described(BOOLEAN, "false: the task already was so")},
)


def subscription(state: bool, flag: str, flag_description: str) -> Schema:
    """`subscribe`'s and `unsubscribe`'s answer."""
    return obj(
        {
            "task_id": described(
                nullable(STRING), "the task; null when no task refers to the item yet"
            ),
            "subscribed": {"type": "boolean", "const": state},
            flag: described(BOOLEAN, flag_description),
        },
        {"external_key": described(STRING, "the item's key, when it was named by it")},
    )
