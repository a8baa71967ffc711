"""The objects of the HTTP API as JSON Schemas (OpenAPI 3.1's dialect of 2020-12), for the
OpenAPI document (`gateway.api.openapi`).

Each schema says what the serializer beside it writes (`core.model.serialize`, the models'
`to_json`, the routes' `*_json`): every field it always writes is required; the enumerations are
taken from core's own enums; a role is its pydantic model's schema. Answers are left open to
fields added later (no `additionalProperties: false`); the tests close them when they check the
gateway's real answers against these schemas, so a field written but not described here fails
there. Request bodies, which the routes read strictly, are closed (`request_body`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import Enum
from typing import Any

from core.model.approvals import OptionKind, Outcome
from core.model.deliveries import SlackDelivery
from core.model.endpoints import KINDS, EndpointStatus
from core.model.membership import ParticipantState
from core.model.roles import Role
from core.model.runs.run import RunKind, RunStatus, TurnCause, TurnOutcome
from core.model.tasks import ActorKind, TaskEventKind, TaskStatus
from core.model.timeline import EventKind

Schema = dict[str, Any]

COMPONENTS = "#/components/schemas/"

STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}
ANY_OBJECT: Schema = {"type": "object"}
TIME: Schema = {"type": "string", "format": "date-time", "description": "RFC 3339, UTC"}
ID: Schema = {"type": "string", "pattern": "^[0-9a-f]{32}$", "description": "32 hex digits"}
ADDRESS: Schema = {
    "type": "string",
    "pattern": "^(person|role):[a-z0-9][a-z0-9._-]*$",
    "description": "a participant: `person:<slug>` or `role:<name>`",
}
SLUG: Schema = {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]*$"}


def ref(name: str) -> Schema:
    return {"$ref": COMPONENTS + name}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def enum(values: type[Enum] | Collection[str]) -> Schema:
    names = [m.value for m in values] if isinstance(values, type) else list(values)
    return {"type": "string", "enum": names}


def const(value: Any) -> Schema:
    return {"const": value}


def described(schema: Schema, description: str) -> Schema:
    return {**schema, "description": description}


def obj(
    properties: Mapping[str, Schema],
    *,
    optional: Collection[str] = (),
    description: str | None = None,
) -> Schema:
    """An object of these fields, each always written unless named in `optional`."""
    schema: Schema = {
        "type": "object",
        "properties": dict(properties),
        "required": [name for name in properties if name not in optional],
    }
    if description is not None:
        schema["description"] = description
    return schema


def extended(base: Schema, **more: Schema) -> Schema:
    """`base` with more fields, all of them always written."""
    return {
        **base,
        "properties": {**base["properties"], **more},
        "required": [*base["required"], *more],
    }


def request_body(
    required: Mapping[str, Schema] | None = None,
    optional: Mapping[str, Schema] | None = None,
) -> Schema:
    """A request body as `channels.edge.requests.read_object` reads it: only these fields, the
    required ones present; an optional field given as null counts as absent."""
    required = required or {}
    optional = optional or {}
    return {
        "type": "object",
        "properties": {**required, **{name: nullable(s) for name, s in optional.items()}},
        "required": list(required),
        "additionalProperties": False,
    }


# --- threads and timelines ----------------------------------------------------------------------

_EVENT_FIELDS: dict[str, Schema] = {
    "id": ID,
    "thread_id": ID,
    "seq": described(INTEGER, "per thread: 1, 2, 3, … without gaps"),
    "position": described(INTEGER, "global, increasing in commit order"),
    "at": TIME,
}


def _event(kind: EventKind, description: str, /, **fields: Schema) -> Schema:
    return obj({**_EVENT_FIELDS, "kind": const(kind.value), **fields}, description=description)


CONTEXT = obj(
    {"kind": STRING, "task": STRING, "originating_message": STRING},
    optional=["task", "originating_message"],
    description="a hint the agent attached (stored and passed on, never branched on)",
)

APPROVAL_OPTION = obj(
    {"id": STRING, "label": STRING, "kind": enum(OptionKind)},
    description="an answer offered: `allow_*`/`reject_*` for a tool call, `choice` for a question",
)
TOOL_CALL_ASKED = obj(
    {"name": STRING, "arguments": ANY_OBJECT},
    description="the tool call the approval is about, as the agent gave it",
)
_APPROVERS = described(array(ADDRESS), "who may answer; empty: the conversation's active people")

_THREADS: dict[str, Schema] = {
    "Thread": obj(
        {
            "id": ID,
            "participants": array(obj({"address": ADDRESS, "state": enum(ParticipantState)})),
            "memory_policy": obj({"thread_only": BOOLEAN}),
            "created_at": TIME,
        }
    ),
    "Message": _event(
        EventKind.MESSAGE,
        "a message of a person or a role",
        author=ADDRESS,
        text=STRING,
        context=nullable(CONTEXT),
        retracted=BOOLEAN,
        channel=described(nullable(STRING), "where it was written (`api`, `web`, `slack`…)"),
        in_reply_to=described(nullable(ID), "for a role's reply: the message it answers"),
        erased=described(BOOLEAN, "a tombstone: text and context erased with a person"),
    ),
    "StateChange": _event(
        EventKind.PARTICIPANT_STATE_CHANGED,
        "a member removed or added again",
        participant=ADDRESS,
        from_state=enum(ParticipantState),
        to_state=enum(ParticipantState),
    ),
    "Retraction": _event(
        EventKind.RETRACTION,
        "an author marks their own message retracted",
        author=ADDRESS,
        target=ID,
        reason=nullable(STRING),
    ),
    "SystemNote": _event(EventKind.SYSTEM, "a note the gateway writes", text=STRING),
    "ApprovalRequested": _event(
        EventKind.APPROVAL_REQUESTED,
        "a role's run asks before it acts; the event's id is the approval's",
        author=described(ADDRESS, "the role asking"),
        run_id=STRING,
        title=STRING,
        description=nullable(STRING),
        options=array(APPROVAL_OPTION),
        tool=nullable(TOOL_CALL_ASKED),
        approvers=_APPROVERS,
        expires_at=TIME,
    ),
    "ApprovalResolved": _event(
        EventKind.APPROVAL_RESOLVED,
        "how an approval was resolved, at most once: answered, expired or cancelled",
        target=described(ID, "the approval (its request's id)"),
        outcome=enum(Outcome),
        option=nullable(APPROVAL_OPTION),
        by=described(nullable(ADDRESS), "who answered"),
        channel=described(nullable(STRING), "where they answered"),
    ),
    "Erased": _event(
        EventKind.ERASED,
        "a person of the thread was erased: their messages (in a conversation, all) are tombstones",
        participant=described(ADDRESS, "the person erased"),
        messages=described(INTEGER, "how many of the thread's messages became tombstones"),
    ),
    "Event": {
        "oneOf": [
            ref("Message"),
            ref("StateChange"),
            ref("Retraction"),
            ref("SystemNote"),
            ref("ApprovalRequested"),
            ref("ApprovalResolved"),
            ref("Erased"),
        ],
        "description": "a timeline event, by `kind`",
    },
    "ThreadPage": obj({"threads": array(ref("Thread")), "next": nullable(ID)}),
    "TimelinePage": obj(
        {"events": array(ref("Event")), "next": nullable(INTEGER), "more": BOOLEAN}
    ),
    "EventPage": obj({"events": array(ref("Event")), "next": INTEGER}),
}


# --- approvals ----------------------------------------------------------------------------------

_APPROVALS: dict[str, Schema] = {
    "Approval": obj(
        {
            "id": described(ID, "its `approval_requested` event's"),
            "thread_id": ID,
            "seq": described(INTEGER, "its request's `seq` in the thread"),
            "requested_at": TIME,
            "role": described(ADDRESS, "the role that asks"),
            "run_id": STRING,
            "title": STRING,
            "description": nullable(STRING),
            "options": array(APPROVAL_OPTION),
            "tool": nullable(TOOL_CALL_ASKED),
            "approvers": _APPROVERS,
            "expires_at": TIME,
            "state": enum(["pending", *(o.value for o in Outcome)]),
            "resolution": described(
                nullable(
                    obj(
                        {
                            "id": described(ID, "its `approval_resolved` event's"),
                            "at": TIME,
                            "outcome": enum(Outcome),
                            "option": nullable(APPROVAL_OPTION),
                            "by": nullable(ADDRESS),
                            "channel": nullable(STRING),
                        }
                    )
                ),
                "null while pending",
            ),
        },
        description="what a role's run asked the people of its conversation, and the answer",
    ),
    "ApprovalList": obj({"approvals": array(ref("Approval"))}),
}


# --- roles and memory ---------------------------------------------------------------------------


def _role_schemas() -> dict[str, Schema]:
    """A role as `gateway.roles.role_json` writes it: its manifest's model (pydantic's own
    schema of `Role`, its parts as components) and its `address`."""
    schema = Role.model_json_schema(mode="serialization", ref_template=COMPONENTS + "{model}")
    parts: dict[str, Schema] = schema.pop("$defs", {})
    kept = parts["RetentionSettings"]["properties"]
    for name in kept:  # written as a manifest writes it (`role_json`), not ISO 8601
        kept[name] = nullable(described(STRING, "`30d`, `12h`, `forever`; null: the default"))
    schema["properties"] = {"address": ADDRESS, **schema["properties"]}
    schema["required"] = ["address", *schema.get("required", [])]
    return {
        **parts,
        "Role": schema,
        "RoleList": obj(
            {
                "roles": array(ref("Role")),
                "next": described(nullable(STRING), "the last name shown, when more follow"),
            }
        ),
    }


_MEMORY: dict[str, Schema] = {
    "MemoryEntry": obj(
        {
            "id": ID,
            "role": STRING,
            "at": TIME,
            "thread_id": nullable(ID),
            "thread_only": BOOLEAN,
            "payload": ANY_OBJECT,
            "cleaned": described(BOOLEAN, "what storage could not keep was mended on reading"),
            "redacted": nullable(obj({"at": TIME, "by": STRING, "reason": nullable(STRING)})),
        }
    ),
    "MemoryPage": obj({"entries": array(ref("MemoryEntry")), "next": nullable(ID)}),
}


# --- runs ---------------------------------------------------------------------------------------

_RUNS: dict[str, Schema] = {
    "Run": obj(
        {
            "id": ID,
            "kind": enum(RunKind),
            "role": STRING,
            "thread_id": nullable(ID),
            "task_id": nullable(ID),
            "cursor": INTEGER,
            "task_cursor": INTEGER,
            "status": enum(RunStatus),
            "failures": INTEGER,
            "last_error": nullable(STRING),
            "turns": INTEGER,
            "session": obj(
                {
                    "id": ID,
                    "number": INTEGER,
                    "opened_at": TIME,
                    "opened": BOOLEAN,
                    "awake": BOOLEAN,
                }
            ),
            "running": BOOLEAN,
            "created_at": TIME,
            "updated_at": TIME,
        }
    ),
    "RunPage": obj({"runs": array(ref("Run")), "next": nullable(ID)}),
    "Turn": obj(
        {
            "id": ID,
            "run_id": ID,
            "number": INTEGER,
            "session_id": ID,
            "cause": enum(TurnCause),
            "outcome": enum(TurnOutcome),
            "cursor_from": INTEGER,
            "cursor_to": INTEGER,
            "queued_at": TIME,
            "started_at": TIME,
            "finished_at": TIME,
            "queue_wait_ms": NUMBER,
            "duration_ms": NUMBER,
            "prompt": described(ANY_OBJECT, "what the agent was told"),
            "steps": described(
                array({**ANY_OBJECT, "required": ["kind"]}),
                "what it did: replies, thoughts, tool calls, limits",
            ),
            "replies": array(ID),
            "attempts": array(
                obj({"started_at": TIME, "finished_at": TIME, "error": nullable(STRING)})
            ),
            "error": nullable(STRING),
            "trace_id": described(
                nullable({"type": "string", "pattern": "^[0-9a-f]{32}$"}),
                "the OpenTelemetry trace the turn ran in (null: not traced; docs/tracing.md)",
            ),
        }
    ),
    "TurnPage": obj({"turns": array(ref("Turn")), "next": INTEGER, "more": BOOLEAN}),
    "Cancelled": obj({"cancelled": const(True), "run": ref("Run")}),
    "Retried": obj({"retried": const(True), "run": ref("Run")}),
    "RunToken": obj({"token": described(STRING, "`rct_…`, shown only here")}),
    "Subscriptions": obj(
        {
            "tasks": array(ref("Task")),
            "awaiting": described(array(STRING), "external keys no task refers to yet"),
        }
    ),
    "Subscribed": obj(
        {
            "task_id": nullable(ID),
            "subscribed": const(True),
            "new": BOOLEAN,
            "external_key": STRING,
        },
        optional=["external_key"],
    ),
}


# --- tasks --------------------------------------------------------------------------------------

_TASK = obj(
    {
        "id": ID,
        "title": STRING,
        "body": STRING,
        "status": enum(TaskStatus),
        "assignee": nullable(STRING),
        "external": nullable(
            obj({"source": STRING, "key": STRING, "url": STRING}, optional=["url"])
        ),
        "created_at": TIME,
        "updated_at": TIME,
        "events": described(INTEGER, "how many task events it has"),
    }
)

_TASKS: dict[str, Schema] = {
    "Task": _TASK,
    "TaskEvent": obj(
        {
            "id": ID,
            "task_id": ID,
            "seq": INTEGER,
            "position": INTEGER,
            "at": TIME,
            "kind": enum(TaskEventKind),
            "actor": obj(
                {"kind": enum(ActorKind), "name": STRING, "run_id": ID}, optional=["run_id"]
            ),
            "changes": described(
                ANY_OBJECT, "`created`: the task's fields; `updated`: {field: {from, to}}"
            ),
            "text": described(nullable(STRING), "a comment's"),
        }
    ),
    "TaskCreated": extended(_TASK, event=ref("TaskEvent")),
    "TaskChanged": extended(_TASK, event=nullable(ref("TaskEvent"))),
    "TaskWithHistory": extended(_TASK, history=array(ref("TaskEvent"))),
    "TaskPage": obj({"tasks": array(ref("ListedTask")), "next": nullable(ID)}),
    "ListedTask": extended(
        _TASK, subscribers=described(INTEGER, "how many conversations watch it")
    ),
    "TaskEventPage": obj(
        {
            "task": ref("Task"),
            "events": array(ref("TaskEvent")),
            "next": described(nullable(INTEGER), "a `seq`"),
        }
    ),
    "TaskSubscriber": obj(
        {
            "run_id": ID,
            "thread_id": ID,
            "role": STRING,
            "since": described(INTEGER, "the task-event position its news begins after"),
            "subscribed_at": TIME,
        }
    ),
    "TaskSubscriberPage": obj(
        {"subscribers": array(ref("TaskSubscriber")), "next": described(nullable(ID), "a run id")}
    ),
}


# --- people -------------------------------------------------------------------------------------

_PERSON = obj(
    {
        "slug": SLUG,
        "address": ADDRESS,
        "display_name": STRING,
        "email": nullable(STRING),
        "active": BOOLEAN,
        "state": enum(["active", "deactivated", "merged", "erased"]),
        "merged_into": nullable(SLUG),
        "created_at": TIME,
        "erased_at": described(nullable(TIME), "when the person was erased"),
    }
)
_ERASURE = obj(
    {
        "threads": INTEGER,
        "messages": described(INTEGER, "that become tombstones"),
        "memory_entries": INTEGER,
        "turns": described(INTEGER, "transcripts that lose their prompt and steps"),
        "slack_posts": described(INTEGER, "the gateway's posts in Slack, deleted"),
        "identities": INTEGER,
        "link_codes": INTEGER,
    }
)

_PEOPLE: dict[str, Schema] = {
    "Person": _PERSON,
    "PersonProfile": extended(
        _PERSON, identities=array(obj({"identity": STRING, "linked_at": TIME}))
    ),
    "PersonPage": obj({"persons": array(ref("Person")), "next": nullable(SLUG)}),
    "MessagePage": obj(
        {
            "messages": array(
                obj(
                    {
                        "id": ID,
                        "thread_id": ID,
                        "seq": INTEGER,
                        "position": INTEGER,
                        "at": TIME,
                        "author": nullable(ADDRESS),
                        "text": STRING,
                    }
                )
            ),
            "next": nullable(INTEGER),
        }
    ),
    "ThreadChannels": obj(
        {
            "slack": array(
                obj(
                    {
                        "role": STRING,
                        "team_id": STRING,
                        "channel_id": STRING,
                        "bound_at": TIME,
                        "since_position": INTEGER,
                        "cursor": nullable(INTEGER),
                        "deliveries": array(
                            obj(
                                {
                                    "message_id": ID,
                                    "seq": INTEGER,
                                    "state": enum(SlackDelivery),
                                    "ts": nullable(STRING),
                                }
                            )
                        ),
                    }
                )
            ),
            "widget": array(obj({"person": ADDRESS, "identity": STRING})),
        }
    ),
    "Erasure": _ERASURE,
    "ErasurePlan": obj({"person": ADDRESS, "erases": ref("Erasure")}),
    "ErasedPerson": extended(
        _PERSON,
        identities=array(obj({"identity": STRING, "linked_at": TIME})),
        erased=ref("Erasure"),
    ),
    "LinkCode": obj(
        {"code": described(STRING, "shown only here"), "person": SLUG, "expires_at": TIME}
    ),
}


# --- endpoints and replicas ---------------------------------------------------------------------

_ENDPOINT = obj(
    {
        "id": ID,
        "url": STRING,
        "kinds": array(enum(KINDS)),
        "roles": array(STRING),
        "threads": array(ID),
        "status": enum(EndpointStatus),
        "reason": nullable(STRING),
        "failures": INTEGER,
        "position": INTEGER,
        "task_position": INTEGER,
        "next_attempt_at": nullable(TIME),
        "created_at": TIME,
        "updated_at": TIME,
    }
)

_ENDPOINTS: dict[str, Schema] = {
    "Endpoint": _ENDPOINT,
    "EndpointCreated": extended(
        _ENDPOINT, secret=described(STRING, "`whsec_…`, its signing secret, shown only here")
    ),
    "EndpointDeleted": extended(_ENDPOINT, deleted=const(True)),
    "EndpointShown": extended(
        _ENDPOINT,
        pending=obj(
            {"events": INTEGER, "task_events": INTEGER},
            description="committed events past its cursors, of the kinds it wants",
        ),
        last_failure=nullable(ref("Delivery")),
    ),
    "EndpointList": obj({"endpoints": array(ref("EndpointShown"))}),
    "Delivery": obj(
        {
            "seq": INTEGER,
            "at": TIME,
            "event_id": ID,
            "type": described(STRING, "`timeline.<kind>` or `task.<kind>`"),
            "stream": enum(["timeline", "task"]),
            "position": described(INTEGER, "the event's position in its stream"),
            "delivered": BOOLEAN,
            "http_status": nullable(INTEGER),
            "outcome": described(STRING, "`HTTP 204`, `HTTP 503`, or why there was no answer"),
            "status": described(enum(EndpointStatus), "the endpoint's status after it"),
            "failures": described(INTEGER, "failed attempts in a row after it"),
        }
    ),
    "DeliveryPage": obj(
        {"deliveries": array(ref("Delivery")), "next": described(nullable(INTEGER), "a `seq`")}
    ),
    "Replica": obj(
        {
            "id": STRING,
            "address": STRING,
            "started": TIME,
            "last_heartbeat": TIME,
            "stopped": nullable(TIME),
            "live": BOOLEAN,
            "runs_owned": INTEGER,
            "this": BOOLEAN,
        }
    ),
    "ReplicaList": obj({"replicas": array(ref("Replica")), "this": STRING}),
}


# --- what every route may answer, and the open routes -------------------------------------------

_EDGE: dict[str, Schema] = {
    "Error": obj(
        {
            "error": obj(
                {
                    "code": described(STRING, "stable, for programs"),
                    "message": described(STRING, "for people; may change"),
                }
            )
        },
        description="every failure, whatever its cause",
    ),
    "Health": obj({"status": const("ok")}),
    "Ready": obj({"status": const("ready"), "replica": STRING}),
    "ToolList": obj(
        {"tools": array(obj({"name": STRING, "description": STRING, "input_schema": ANY_OBJECT}))}
    ),
    "HookDelivery": obj(
        {
            "source": STRING,
            "delivery_id": STRING,
            "duplicate": BOOLEAN,
            "ignored": described(nullable(STRING), "why the delivery changed nothing"),
            "task": nullable(ref("Task")),
            "events": array(ref("TaskEvent")),
            "notes": array(STRING),
        }
    ),
}


# --- the widget ---------------------------------------------------------------------------------

_WIDGET_EVENT_FIELDS: dict[str, Schema] = {"id": ID, "seq": INTEGER, "at": TIME}

_WIDGET_OPTION = obj({"id": STRING, "label": STRING, "kind": enum(OptionKind)})
_WIDGET_RESOLUTION_FIELDS: dict[str, Schema] = {
    "kind": const("approval_resolved"),
    "target": described(ID, "the request it resolves"),
    "outcome": enum(Outcome),
    "option": nullable(_WIDGET_OPTION),
    "by": nullable(ADDRESS),
    "by_name": nullable(STRING),
    "mine": BOOLEAN,
    "channel": nullable(STRING),
}

_WIDGET: dict[str, Schema] = {
    "WidgetSession": obj(
        {
            "session_token": STRING,
            "expires_at": TIME,
            "visitor_token": described(STRING, "for an anonymous visitor: keep it"),
            "person": obj({"slug": SLUG, "display_name": STRING}),
            "role": obj(
                {
                    "name": STRING,
                    "display_name": STRING,
                    "greeting": described(nullable(STRING), "for a conversation yet empty"),
                    "suggestions": described(array(STRING), "prompts to send with one click"),
                    "avatar_url": nullable(STRING),
                    "initials": described(STRING, "shown without an avatar"),
                },
                description="the role as the widget presents it",
            ),
            "conversation": ID,
            "last_seq": INTEGER,
        },
        optional=["visitor_token"],
    ),
    "WidgetMessage": obj(
        {
            **_WIDGET_EVENT_FIELDS,
            "kind": const("message"),
            "author": ADDRESS,
            "author_name": STRING,
            "mine": BOOLEAN,
            "text": STRING,
            "retracted": BOOLEAN,
            "erased": described(BOOLEAN, "a tombstone: its text erased with a person"),
            "channel": nullable(STRING),
        }
    ),
    "WidgetErased": obj(
        {
            **_WIDGET_EVENT_FIELDS,
            "kind": const("erased"),
            "participant": ADDRESS,
            "mine": described(BOOLEAN, "the viewer was erased: the session has ended"),
            "messages": INTEGER,
        }
    ),
    "WidgetRetraction": obj(
        {
            **_WIDGET_EVENT_FIELDS,
            "kind": const("retraction"),
            "author": ADDRESS,
            "author_name": STRING,
            "mine": BOOLEAN,
            "target": ID,
        }
    ),
    "WidgetNote": obj(
        {
            **_WIDGET_EVENT_FIELDS,
            "kind": const("system"),
            "text": STRING,
            "fresh": BOOLEAN,
            "archive_before": INTEGER,
        },
        optional=["archive_before"],
    ),
    "WidgetApprovalResolved": obj({**_WIDGET_EVENT_FIELDS, **_WIDGET_RESOLUTION_FIELDS}),
    "WidgetApprovalRequested": obj(
        {
            **_WIDGET_EVENT_FIELDS,
            "kind": const("approval_requested"),
            "author": ADDRESS,
            "author_name": STRING,
            "mine": BOOLEAN,
            "title": STRING,
            "description": nullable(STRING),
            "options": array(_WIDGET_OPTION),
            "tool": nullable(obj({"name": STRING, "arguments": {"type": "object"}})),
            "approvers": array(obj({"address": ADDRESS, "name": STRING})),
            "can_answer": described(BOOLEAN, "whether the viewer may answer it"),
            "expires_at": TIME,
            "state": enum(["pending", *(o.value for o in Outcome)]),
            "resolution": nullable(ref("WidgetApprovalResolved")),
        }
    ),
    "WidgetAnswered": obj({"event": ref("WidgetApprovalResolved")}),
    "WidgetEvent": {
        "oneOf": [
            ref("WidgetMessage"),
            ref("WidgetRetraction"),
            ref("WidgetNote"),
            ref("WidgetApprovalRequested"),
            ref("WidgetApprovalResolved"),
            ref("WidgetErased"),
        ],
        "description": "an event as the widget shows it, by `kind`",
    },
    "WidgetHistory": obj(
        {
            "events": array(ref("WidgetEvent")),
            "more": BOOLEAN,
            "earlier": BOOLEAN,
            "predecessor": nullable(ID),
        }
    ),
    "WidgetPosted": obj({"event": ref("WidgetMessage")}),
    "WidgetFresh": obj({"archive_before": INTEGER}),
    "WidgetLinkCode": obj({"code": STRING, "expires_at": TIME}),
}


def components() -> dict[str, Schema]:
    """Every named schema of the document."""
    return {
        **_EDGE,
        **_THREADS,
        **_APPROVALS,
        **_role_schemas(),
        **_MEMORY,
        **_RUNS,
        **_TASKS,
        **_PEOPLE,
        **_ENDPOINTS,
        **_WIDGET,
    }
