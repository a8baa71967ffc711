"""The operator API's operations for the OpenAPI document (`gateway.api.openapi`), and how an
operation is declared.

An operation names what the route reads — its query parameters and its body's fields, exactly as
its handler hands them to `channels.edge.requests` (`read_query`, `read_object`) — and what it
answers: each success with its schema (a 201 with its `Location`), the failures particular to
it (their codes in the description), and `default`, the one error shape. The failures every
route shares (401 without its credentials, 422 for what the reading refuses) are added here.
docs/api.md says the same in prose; tests/api/test_openapi.py holds the document to the routes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from channels.edge.requests import MAX_QUERY_INT
from core.model.endpoints import MAX_POSITION
from core.model.membership import ParticipantState
from core.model.runs.run import RunStatus
from core.model.tasks import TaskStatus
from core.storage.pages import DEFAULT_PAGE, MAX_PAGE
from gateway.api.approvals import LISTED
from gateway.api.openapi_overview import overview_schema
from gateway.api.openapi_schemas import (
    BOOLEAN,
    STRING,
    Schema,
    array,
    described,
    enum,
    obj,
    ref,
    request_body,
)

Operation = dict[str, Any]

OPERATOR: list[dict[str, list[str]]] = [{"operatorToken": []}]
RUN_TOKEN: list[dict[str, list[str]]] = [{"runToken": []}]
WIDGET_SESSION: list[dict[str, list[str]]] = [{"widgetSession": []}]
OPEN: list[dict[str, list[str]]] = []

_REFUSED = (
    "a query parameter, field or value the route refuses: `unknown_parameter`, "
    "`repeated_parameter`, `invalid_parameter`, `invalid_body`, `unknown_field`, "
    "`missing_field`, `invalid_unicode`, `nul_character`, `invalid_number`, `too_deeply_nested`"
)
_UNAUTHORIZED = {
    "operatorToken": "`unauthorized`: no operator token, or a wrong one; `token_revoked`",
    "runToken": "`invalid_run_token`: no run token, or one that names no run",
    "widgetSession": "`invalid_session` or `session_expired`: start a new session",
}
_SHARED = {
    "Refused": _REFUSED,
    "Failure": "any other failure, in the one error shape",
    **{f"{scheme}Refused": what for scheme, what in _UNAUTHORIZED.items()},
}


def shared_responses() -> dict[str, Any]:
    """The answers many operations share, as the document's `components.responses`."""
    return {name: failure(what) for name, what in _SHARED.items()}


def _shared(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/responses/{name}"}


def json_content(schema: Schema) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def answer(description: str, schema: Schema | None = None) -> dict[str, Any]:
    """A JSON answer (no body when `schema` is None)."""
    response: dict[str, Any] = {"description": description}
    if schema is not None:
        response["content"] = json_content(schema)
    return response


def made(description: str, schema: Schema, location: str) -> dict[str, Any]:
    """A 201 answer: the JSON and `Location`, the URL that reads what was made."""
    return {
        "description": description,
        "headers": {
            "Location": {"required": True, "description": location, "schema": STRING},
        },
        "content": json_content(schema),
    }


def failure(description: str) -> dict[str, Any]:
    return {"description": description, "content": json_content(ref("Error"))}


def query(name: str, schema: Schema, description: str, *, required: bool = False) -> dict[str, Any]:
    parameter: dict[str, Any] = {
        "name": name,
        "in": "query",
        "description": description,
        "schema": schema,
    }
    if required:
        parameter["required"] = True
    return parameter


def body(schema: Schema, *, required: bool = True, description: str | None = None) -> Operation:
    """A JSON request body; `required=False` for a route that takes no body at all as `{}`."""
    request: Operation = {"required": required, "content": json_content(schema)}
    if description is not None:
        request["description"] = description
    return request


def operation(
    operation_id: str,
    summary: str,
    *,
    tag: str,
    answers: Mapping[int, dict[str, Any]],
    failures: Mapping[int, str] | None = None,
    parameters: Sequence[dict[str, Any]] = (),
    request: Operation | None = None,
    description: str | None = None,
    security: list[dict[str, list[str]]] | None = None,
) -> Operation:
    """One operation; `security` None is the document's default, the operator token."""
    op: Operation = {"operationId": operation_id, "summary": summary, "tags": [tag]}
    if description is not None:
        op["description"] = description
    if security is not None:
        op["security"] = security
    if parameters:
        op["parameters"] = list(parameters)
    if request is not None:
        op["requestBody"] = request
    responses: dict[str, Any] = {str(status): response for status, response in answers.items()}
    failures = dict(failures or {})
    if 422 in failures:
        failures[422] = f"{failures[422]}; or {_REFUSED}"
    for scheme in security if security is not None else OPERATOR:
        for name in scheme:
            responses["401"] = _shared(f"{name}Refused")
    responses.setdefault("422", _shared("Refused"))
    for status, what in failures.items():
        responses[str(status)] = failure(what)
    responses["default"] = _shared("Failure")
    op["responses"] = dict(sorted(responses.items()))
    return op


def path(params: Mapping[str, str] | None = None, **operations: Operation) -> dict[str, Any]:
    """A path item: its operations by method, and its path parameters (name: description)."""
    item: dict[str, Any] = dict(operations)
    if params:
        item["parameters"] = [
            {"name": name, "in": "path", "required": True, "description": what, "schema": STRING}
            for name, what in params.items()
        ]
    return item


def limit(default: int = DEFAULT_PAGE, high: int = MAX_PAGE) -> dict[str, Any]:
    schema = {"type": "integer", "minimum": 1, "maximum": high, "default": default}
    return query("limit", schema, "at most this many")


def position(name: str, description: str, *, low: int = 0) -> dict[str, Any]:
    schema = {"type": "integer", "minimum": low, "maximum": MAX_QUERY_INT}
    return query(name, schema, description)


def flag(name: str, description: str) -> dict[str, Any]:
    return query(name, {"type": "boolean", "default": False}, description)


def after_id(what: str) -> dict[str, Any]:
    schema = {"type": "string", "pattern": "^[0-9a-f]{32}$"}
    return query("after", schema, f"the page after this {what} (the previous page's `next`)")


# --- the fields of request bodies, as clients send them -------------------------------------

_ADDRESS_IN = described(STRING, "an address, `person:<slug>` or `role:<name>`")
_PERSON_IN = described(STRING, "the person it is recorded as made by, `person:<slug>`")
_ASSIGNEE_IN = described(STRING, "a role this gateway serves (`name` or `role:<name>`)")
_CONTEXT_IN = obj(
    {"kind": STRING, "task": STRING, "originating_message": STRING},
    optional=["task", "originating_message"],
)
_CONTEXT_IN["additionalProperties"] = False
_POSITION_IN = described(
    {"type": "integer", "minimum": 0, "maximum": MAX_POSITION}, "a position, inclusive"
)
_CLOSED = {"additionalProperties": False}
_EVENT_LOCATION = "the thread's timeline holding this event alone"
_THREAD = {"id": "the thread's id"}
_RUN = {"id": "the run's id"}
_TASK = {"id": "the task's id"}
_PERSON = {"slug": "the person's slug (or `person:<slug>`)"}
_ENDPOINT = {"id": "the endpoint's id"}


def _threads() -> dict[str, Any]:
    tag = "threads"
    return {
        "/api/v1/threads": path(
            post=operation(
                "resolve_thread",
                "Resolve a participant set to its one thread",
                tag=tag,
                request=body(
                    request_body(
                        {"participants": {**array(_ADDRESS_IN), "minItems": 2}},
                    )
                ),
                answers={
                    201: made("created now", ref("Thread"), "the thread"),
                    200: answer("the thread existed", ref("Thread")),
                },
                failures={
                    410: "`person_erased`: the set names an erased person",
                    422: "`invalid_participants`, `invalid_address`, `too_few_participants`, "
                    "`too_many_participants`, `unknown_role`",
                },
            ),
            get=operation(
                "list_threads",
                "The threads of a participant, oldest first",
                tag=tag,
                parameters=[
                    query("participant", STRING, "an address", required=True),
                    after_id("thread id"),
                    limit(),
                ],
                answers={200: answer("a page", ref("ThreadPage"))},
                failures={422: "`missing_parameter`, `invalid_address`"},
            ),
        ),
        "/api/v1/threads/{id}": path(
            _THREAD,
            get=operation(
                "show_thread",
                "One thread",
                tag=tag,
                answers={200: answer("the thread", ref("Thread"))},
                failures={404: "`thread_not_found`"},
            ),
            patch=operation(
                "update_thread",
                "Change a thread's memory policy",
                tag=tag,
                request=body(
                    request_body({"memory_policy": {**obj({"thread_only": BOOLEAN}), **_CLOSED}})
                ),
                answers={200: answer("the thread", ref("Thread"))},
                failures={404: "`thread_not_found`", 422: "`invalid_memory_policy`"},
            ),
        ),
        "/api/v1/threads/{id}/messages": path(
            _THREAD,
            post=operation(
                "post_message",
                "Post a message",
                tag=tag,
                request=body(
                    request_body(
                        {"author": _ADDRESS_IN, "text": STRING},
                        {"context": _CONTEXT_IN, "channel": described(STRING, "default `api`")},
                    )
                ),
                answers={201: made("the message event", ref("Message"), _EVENT_LOCATION)},
                failures={
                    403: "`not_a_member`, `participant_removed`",
                    404: "`thread_not_found`",
                    413: "`text_too_long`",
                    422: "`invalid_address`, `invalid_text`, `empty_text`, `invalid_context`",
                },
            ),
        ),
        "/api/v1/threads/{id}/messages/{message_id}/retract": path(
            {**_THREAD, "message_id": "the message's id"},
            post=operation(
                "retract_message",
                "Retract one's own message",
                tag=tag,
                request=body(request_body({"author": _ADDRESS_IN}, {"reason": STRING})),
                answers={201: made("the retraction event", ref("Retraction"), _EVENT_LOCATION)},
                failures={
                    403: "`not_the_author`, `not_a_member`, `participant_removed`",
                    404: "`thread_not_found`, `message_not_found`",
                    409: "`already_retracted`",
                    413: "`reason_too_long`",
                    422: "`invalid_address`, `invalid_reason`",
                },
            ),
        ),
        "/api/v1/threads/{id}/participants/{addr}": path(
            {**_THREAD, "addr": "the member's address"},
            post=operation(
                "change_participant_state",
                "Remove a member, or add them again",
                tag=tag,
                request=body(request_body({"state": enum(ParticipantState)})),
                answers={200: answer("the state change", ref("StateChange"))},
                failures={
                    404: "`thread_not_found`",
                    409: "`never_a_member`, `illegal_state_change`",
                    422: "`invalid_address`, `invalid_state`",
                },
            ),
        ),
        "/api/v1/threads/{id}/timeline": path(
            _THREAD,
            get=operation(
                "read_timeline",
                "Read a thread's timeline, forward or backward",
                tag=tag,
                parameters=[
                    query("as", STRING, "only what this participant may see"),
                    position("after", "read forward: events with `seq` above this"),
                    position("before", "read backward: events with `seq` below this", low=1),
                    flag("latest", "read backward from the end"),
                    limit(),
                    flag("include_archived", "also what came before the latest start fresh"),
                ],
                answers={200: answer("a page, in `seq` order", ref("TimelinePage"))},
                failures={
                    403: "`not_a_member`",
                    404: "`thread_not_found`",
                    422: "`invalid_address`, `conflicting_parameters`",
                },
            ),
        ),
        "/api/v1/threads/{id}/channels": path(
            _THREAD,
            get=operation(
                "thread_channels",
                "The Slack DMs and widget identities of a thread, and its messages' state there",
                tag=tag,
                parameters=[
                    position("first", "the first seq whose delivery state to read", low=1),
                    position("last", "the last (at most 499 after `first`)", low=1),
                ],
                answers={200: answer("its channels", ref("ThreadChannels"))},
                failures={
                    404: "`thread_not_found`",
                    422: "`missing_parameter`, `invalid_parameter`",
                },
            ),
        ),
        "/api/v1/events": path(
            get=operation(
                "read_events",
                "Every thread's events after a position (long poll with `wait`)",
                tag="events",
                parameters=[
                    position("after", "the position to read after"),
                    limit(default=MAX_PAGE),
                    query(
                        "wait",
                        {"type": "integer", "minimum": 0, "maximum": 30, "default": 0},
                        "seconds to hold the request while nothing lies past `after`",
                    ),
                ],
                answers={200: answer("a page; resume with `after=next`", ref("EventPage"))},
            ),
        ),
    }


def _approvals() -> dict[str, Any]:
    tag = "approvals"
    states = {**enum(["pending", "all"]), "default": "pending"}
    return {
        "/api/v1/threads/{id}/approvals": path(
            _THREAD,
            get=operation(
                "list_approvals",
                "A thread's approvals, oldest first",
                tag=tag,
                parameters=[
                    query("state", states, "`pending`: those not resolved yet; `all`: every one"),
                    query("as", STRING, "only those this participant may see"),
                ],
                answers={200: answer(f"at most {LISTED}, oldest first", ref("ApprovalList"))},
                failures={
                    403: "`not_a_member`",
                    404: "`thread_not_found`",
                    422: "`invalid_address`",
                },
            ),
        ),
        "/api/v1/approvals/{id}": path(
            {"id": "the approval's id (its `approval_requested` event's)"},
            get=operation(
                "show_approval",
                "One approval, with its resolution",
                tag=tag,
                answers={200: answer("the approval", ref("Approval"))},
                failures={404: "`approval_not_found`"},
            ),
            post=operation(
                "answer_approval",
                "Answer an approval as a person of its conversation",
                tag=tag,
                description="The first valid answer, from any channel, resolves the approval; "
                "every later one is 409 `approval_closed`, saying who answered what.",
                request=body(
                    request_body(
                        {
                            "option": described(STRING, "the id of the option chosen"),
                            "as": described(STRING, "the person answering, `person:<slug>`"),
                        },
                        {"channel": described(STRING, "where they answered; default `api`")},
                    )
                ),
                answers={200: answer("the approval, answered", ref("Approval"))},
                failures={
                    403: "`not_an_approver` (not named among its approvers, or not a person), "
                    "`not_a_member`, `participant_removed`, `person_deactivated`",
                    404: "`approval_not_found`",
                    409: "`approval_closed`: answered already (the message says by whom), "
                    "expired or cancelled",
                    422: "`invalid_option`, `unknown_option`, `invalid_address`, `invalid_channel`",
                },
            ),
        ),
    }


def _roles_and_memory() -> dict[str, Any]:
    return {
        "/api/v1/roles": path(
            get=operation(
                "list_roles",
                "The roles this gateway serves, by name: every one, or a page with `limit`",
                tag="roles",
                parameters=[
                    query("after", STRING, "the page after this role's name"),
                    query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
                        "at most this many (without it: every role)",
                    ),
                ],
                answers={200: answer("the roles", ref("RoleList"))},
            ),
        ),
        "/api/v1/roles/{name}": path(
            {"name": "the role's name"},
            get=operation(
                "show_role",
                "One role",
                tag="roles",
                answers={200: answer("the role", ref("Role"))},
                failures={404: "`role_not_found`"},
            ),
        ),
        "/api/v1/roles/{role}/memory": path(
            {"role": "the role's name"},
            get=operation(
                "list_memory",
                "A role's memory entries, oldest first, redacted ones marked",
                tag="memory",
                parameters=[
                    query("thread", STRING, "only entries stored in this thread (its id)"),
                    after_id("entry id"),
                    limit(),
                ],
                answers={200: answer("a page", ref("MemoryPage"))},
                failures={404: "`role_not_found`"},
            ),
        ),
        "/api/v1/roles/{role}/memory/{entry_id}/redact": path(
            {"role": "the role's name", "entry_id": "the entry's id"},
            post=operation(
                "redact_memory",
                "Redact a memory entry: no recall returns it again",
                tag="memory",
                request=body(request_body(optional={"reason": STRING}), required=False),
                answers={
                    201: made(
                        "the entry with its redaction",
                        ref("MemoryEntry"),
                        "the role's memory listing holding this entry alone",
                    )
                },
                failures={
                    404: "`role_not_found`, `memory_entry_not_found`",
                    409: "`already_redacted`",
                    413: "`reason_too_long`",
                    422: "`invalid_reason`",
                },
            ),
        ),
    }


def _runs() -> dict[str, Any]:
    tag = "runs"
    no_fields = body(request_body(), required=False, description="no fields; no body is fine")
    return {
        "/api/v1/runs": path(
            get=operation(
                "list_runs",
                "The runs of a thread, on a task, or of a role",
                tag=tag,
                description="Exactly one of `thread`, `task` and `role`; `after` and `limit` "
                "page a role's runs, `status` keeps only those of that status.",
                parameters=[
                    query("thread", STRING, "a thread's id"),
                    query("task", STRING, "a task's id"),
                    query("role", STRING, "a role's name"),
                    query("status", enum(RunStatus), "a role's runs of this status only"),
                    after_id("run id"),
                    limit(),
                ],
                answers={200: answer("the runs", ref("RunPage"))},
                failures={
                    404: "`thread_not_found`, `task_not_found`",
                    422: "`missing_parameter`, `conflicting_parameters`, `invalid_parameter`",
                },
            ),
        ),
        "/api/v1/runs/{id}": path(
            _RUN,
            get=operation(
                "show_run",
                "One run",
                tag=tag,
                answers={200: answer("the run", ref("Run"))},
                failures={404: "`run_not_found`"},
            ),
        ),
        "/api/v1/runs/{id}/turns": path(
            _RUN,
            get=operation(
                "list_turns",
                "A run's finished turns: the transcript",
                tag=tag,
                parameters=[position("after", "the turn number to read after"), limit()],
                answers={200: answer("a page", ref("TurnPage"))},
                failures={404: "`run_not_found`"},
            ),
        ),
        "/api/v1/runs/{id}/cancel": path(
            _RUN,
            post=operation(
                "cancel_turn",
                "Stop the running turn at once",
                tag=tag,
                request=no_fields,
                answers={200: answer("the turn ended as cancelled", ref("Cancelled"))},
                failures={404: "`run_not_found`", 409: "`no_turn_running`"},
            ),
        ),
        "/api/v1/runs/{id}/sessions": path(
            _RUN,
            post=operation(
                "start_fresh",
                "Start fresh: open the run's next session",
                tag=tag,
                request=no_fields,
                answers={201: made("the run with its new session", ref("Run"), "the run")},
                failures={404: "`run_not_found`"},
            ),
        ),
        "/api/v1/runs/{id}/retry": path(
            _RUN,
            post=operation(
                "retry_run",
                "Take a failed run's last turn again",
                tag=tag,
                request=no_fields,
                answers={200: answer("the run, its cursor set back", ref("Retried"))},
                failures={
                    404: "`run_not_found`, `role_not_found`",
                    409: "`not_failed`, `not_a_conversation`, `run_moved`",
                },
            ),
        ),
        "/api/v1/runs/{id}/token": path(
            _RUN,
            post=operation(
                "mint_token",
                "Mint a run token for the agent tools",
                tag=tag,
                request=no_fields,
                answers={
                    201: made("the token, shown once", ref("RunToken"), "the run the token names")
                },
                failures={404: "`run_not_found`"},
            ),
        ),
        "/api/v1/runs/{id}/subscriptions": path(
            _RUN,
            get=operation(
                "list_subscriptions",
                "What a conversation's run watches",
                tag=tag,
                answers={200: answer("its tasks and awaited items", ref("Subscriptions"))},
                failures={403: "`not_a_conversation`", 404: "`run_not_found`"},
            ),
            post=operation(
                "subscribe",
                "Have the run watch a task, or an external item by key",
                tag=tag,
                description="Exactly one of `task_id` and `external_key`.",
                request=body(
                    request_body(
                        optional={
                            "task_id": STRING,
                            "external_key": described(STRING, "`<source>:<key>`"),
                        }
                    )
                ),
                answers={
                    201: made("watched from now on", ref("Subscribed"), "what the run watches"),
                    200: answer("watched already", ref("Subscribed")),
                },
                failures={
                    403: "`not_a_conversation`",
                    404: "`run_not_found`, `task_not_found`",
                    422: "`invalid_argument`, `invalid_external_key`",
                },
            ),
        ),
    }


def _tasks() -> dict[str, Any]:
    tag = "tasks"
    external = {
        **obj({"source": STRING, "key": STRING, "url": STRING}, optional=["url"]),
        **_CLOSED,
    }
    return {
        "/api/v1/tasks": path(
            post=operation(
                "create_task",
                "Create a task",
                tag=tag,
                request=body(
                    request_body(
                        {"author": _PERSON_IN, "title": STRING},
                        {"body": STRING, "assignee": _ASSIGNEE_IN, "external": external},
                    )
                ),
                answers={201: made("the task and its event", ref("TaskCreated"), "the task")},
                failures={
                    409: "`external_taken`",
                    422: "`invalid_author`, `invalid_title`, `unknown_role`, `invalid_external`",
                },
            ),
            get=operation(
                "list_tasks",
                "Tasks, oldest first",
                tag=tag,
                parameters=[
                    query("status", enum(TaskStatus), "only tasks in this status"),
                    query("assignee", STRING, "only tasks assigned to this role"),
                    after_id("task id"),
                    limit(),
                ],
                answers={200: answer("a page", ref("TaskPage"))},
            ),
        ),
        "/api/v1/tasks/{id}": path(
            _TASK,
            get=operation(
                "show_task",
                "One task with its history",
                tag=tag,
                answers={200: answer("the task", ref("TaskWithHistory"))},
                failures={404: "`task_not_found`"},
            ),
            patch=operation(
                "update_task",
                "Change a task",
                tag=tag,
                request=body(
                    request_body(
                        {"author": _PERSON_IN},
                        {
                            "title": STRING,
                            "body": STRING,
                            "status": enum(TaskStatus),
                            "assignee": described(_ASSIGNEE_IN, "null unassigns"),
                        },
                    )
                ),
                answers={
                    200: answer("the task; `event` null when nothing changed", ref("TaskChanged"))
                },
                failures={
                    404: "`task_not_found`",
                    409: "`illegal_status_change`, `already_in_status`",
                    422: "`invalid_author`, `unknown_role`",
                },
            ),
        ),
        "/api/v1/tasks/{id}/events": path(
            _TASK,
            get=operation(
                "list_task_events",
                "A task and its events, a page at a time",
                tag=tag,
                parameters=[position("after", "the events after this `seq`"), limit()],
                answers={200: answer("a page, in `seq` order", ref("TaskEventPage"))},
                failures={404: "`task_not_found`"},
            ),
        ),
        "/api/v1/tasks/{id}/subscribers": path(
            _TASK,
            get=operation(
                "list_task_subscribers",
                "The conversations' runs watching a task",
                tag=tag,
                parameters=[after_id("run id"), limit()],
                answers={200: answer("a page, by run id", ref("TaskSubscriberPage"))},
                failures={404: "`task_not_found`"},
            ),
        ),
        "/api/v1/tasks/{id}/comments": path(
            _TASK,
            post=operation(
                "comment_on_task",
                "Comment on a task",
                tag=tag,
                request=body(request_body({"author": _PERSON_IN, "text": STRING})),
                answers={
                    201: made(
                        "the `commented` event",
                        ref("TaskEvent"),
                        "the task, whose history holds the comment",
                    )
                },
                failures={404: "`task_not_found`", 422: "`invalid_author`"},
            ),
        ),
    }


def _people() -> dict[str, Any]:
    tag = "people"
    identity = described(STRING, "`web:<site>:<user id>` or `slack:<team>:<user id>`")
    return {
        "/api/v1/persons": path(
            get=operation(
                "list_persons",
                "People, in slug order",
                tag=tag,
                parameters=[query("after", STRING, "the page after this slug"), limit()],
                answers={200: answer("a page", ref("PersonPage"))},
            ),
            post=operation(
                "create_person",
                "Create a person",
                tag=tag,
                request=body(
                    request_body(
                        {"display_name": STRING},
                        {
                            "slug": described(STRING, "derived from the name when left out"),
                            "email": STRING,
                        },
                    )
                ),
                answers={201: made("the person", ref("PersonProfile"), "the person")},
                failures={
                    409: "`person_exists`",
                    413: "`display_name_too_long`, `email_too_long`",
                    422: "`invalid_slug`, `invalid_display_name`, `invalid_email`",
                },
            ),
        ),
        "/api/v1/persons/{slug}": path(
            _PERSON,
            get=operation(
                "show_person",
                "One person with their identities",
                tag=tag,
                answers={200: answer("the person", ref("PersonProfile"))},
                failures={404: "`person_not_found`"},
            ),
            delete=operation(
                "erase_person",
                "Erase a person: their content, memory, identities and platform copies",
                tag=tag,
                parameters=[
                    query(
                        "erase",
                        enum(["true"]),
                        "`true` to erase: without it, nothing is erased and the error lists "
                        "what would be",
                    )
                ],
                answers={200: answer("the erased person, and what went", ref("ErasedPerson"))},
                failures={
                    404: "`person_not_found`",
                    409: "`person_merged` (erase the person they were merged into)",
                    422: "`erase_not_confirmed` (its message lists what would go)",
                },
            ),
            patch=operation(
                "update_person",
                "Change, deactivate or reactivate a person",
                tag=tag,
                request=body(
                    request_body(
                        optional={
                            "active": BOOLEAN,
                            "display_name": STRING,
                            "email": described(STRING, "null clears it"),
                        }
                    )
                ),
                answers={200: answer("the person", ref("PersonProfile"))},
                failures={
                    404: "`person_not_found`",
                    409: "`person_merged`",
                    410: "`person_erased`",
                    422: "`invalid_active`, `invalid_display_name`, `invalid_email`",
                },
            ),
        ),
        "/api/v1/persons/{slug}/erasure": path(
            _PERSON,
            get=operation(
                "erasure_plan",
                "What erasing a person would remove",
                tag=tag,
                answers={200: answer("counts of what would go", ref("ErasurePlan"))},
                failures={404: "`person_not_found`", 409: "`person_merged`"},
            ),
        ),
        "/api/v1/persons/{slug}/identities": path(
            _PERSON,
            post=operation(
                "add_identity",
                "Link a channel identity to a person",
                tag=tag,
                request=body(request_body({"identity": identity})),
                answers={
                    201: made("linked now", ref("PersonProfile"), "the person"),
                    200: answer("theirs already", ref("PersonProfile")),
                },
                failures={
                    404: "`person_not_found`",
                    409: "`identity_taken`, `person_deactivated`, `person_merged`",
                    410: "`person_erased`",
                    422: "`invalid_identity`",
                },
            ),
        ),
        "/api/v1/persons/{slug}/link-codes": path(
            _PERSON,
            post=operation(
                "new_link_code",
                "A one-time link code for a person",
                tag=tag,
                request=body(
                    request_body(
                        optional={
                            "ttl_seconds": {"type": "integer", "minimum": 1, "maximum": 604800}
                        }
                    ),
                    required=False,
                ),
                answers={
                    201: made(
                        "the code, shown once", ref("LinkCode"), "the person the code links to"
                    )
                },
                failures={
                    404: "`person_not_found`",
                    409: "`person_deactivated`, `person_merged`",
                    410: "`person_erased`",
                    422: "`invalid_ttl`",
                },
            ),
        ),
        "/api/v1/link-codes/redeem": path(
            post=operation(
                "redeem_link_code",
                "Link an identity to a link code's person",
                tag=tag,
                request=body(request_body({"code": STRING, "identity": identity})),
                answers={200: answer("the code's person", ref("PersonProfile"))},
                failures={
                    404: "`link_code_unknown`, `link_code_used`, `link_code_expired`",
                    409: "`person_deactivated`, `person_merged`",
                    422: "`invalid_link_code`, `invalid_identity`",
                },
            ),
        ),
    }


def _endpoints() -> dict[str, Any]:
    tag = "endpoints"
    invalid = (
        "`invalid_url`, `private_address`, `unresolvable_host`, `invalid_kinds`, "
        "`invalid_roles`, `unknown_role`, `invalid_threads`, `unknown_thread`, "
        "`invalid_position`"
    )
    return {
        "/api/v1/endpoints": path(
            post=operation(
                "create_endpoint",
                "Register an outbound webhook endpoint",
                tag=tag,
                request=body(
                    request_body(
                        {"url": described(STRING, "http:// or https://")},
                        {
                            "kinds": array(STRING),
                            "roles": array(STRING),
                            "threads": array(STRING),
                            "from_position": _POSITION_IN,
                            "from_task_position": _POSITION_IN,
                        },
                    )
                ),
                answers={
                    201: made(
                        "the endpoint and its secret, shown once",
                        ref("EndpointCreated"),
                        "the endpoint",
                    )
                },
                failures={422: invalid},
            ),
            get=operation(
                "list_endpoints",
                "The endpoints, oldest first",
                tag=tag,
                answers={200: answer("the endpoints", ref("EndpointList"))},
            ),
        ),
        "/api/v1/endpoints/{id}": path(
            _ENDPOINT,
            get=operation(
                "show_endpoint",
                "One endpoint: status, reason, failures, cursors, backlog",
                tag=tag,
                answers={200: answer("the endpoint", ref("EndpointShown"))},
                failures={404: "`endpoint_not_found`"},
            ),
            delete=operation(
                "delete_endpoint",
                "Delete an endpoint; its deliveries stop",
                tag=tag,
                answers={200: answer("the endpoint as it was", ref("EndpointDeleted"))},
                failures={404: "`endpoint_not_found`"},
            ),
        ),
        "/api/v1/endpoints/{id}/deliveries": path(
            _ENDPOINT,
            get=operation(
                "list_deliveries",
                "An endpoint's delivery log, newest attempt first",
                tag=tag,
                parameters=[
                    position("before", "the attempts before this `seq`", low=1),
                    flag("failed", "only the failed attempts"),
                    limit(),
                ],
                answers={200: answer("a page", ref("DeliveryPage"))},
                failures={404: "`endpoint_not_found`"},
            ),
        ),
        "/api/v1/endpoints/{id}/replay": path(
            _ENDPOINT,
            post=operation(
                "replay_endpoint",
                "Deliver again from a position; active again",
                tag=tag,
                request=body(
                    request_body(
                        optional={
                            "from_position": _POSITION_IN,
                            "from_task_position": _POSITION_IN,
                        }
                    ),
                    required=False,
                ),
                answers={200: answer("the endpoint", ref("Endpoint"))},
                failures={404: "`endpoint_not_found`", 422: "`invalid_position`"},
            ),
        ),
        "/api/v1/replicas": path(
            get=operation(
                "list_replicas",
                "The replicas serving this database",
                tag="replicas",
                parameters=[flag("stopped", "also those that stopped cleanly")],
                answers={200: answer("the replicas", ref("ReplicaList"))},
            ),
        ),
    }


def _overview_and_search() -> dict[str, Any]:
    """`gateway.api.overview` and `gateway.api.search` (what the console reads)."""
    return {
        "/api/v1/overview": path(
            get=operation(
                "overview",
                "The gateway at a glance: threads, runs, the last hour's turns, deliveries",
                tag="overview",
                answers={200: answer("the figures", overview_schema())},
            ),
        ),
        "/api/v1/search/persons": path(
            get=operation(
                "search_persons",
                "People whose slug, name, email or a linked identity holds a text",
                tag="people",
                parameters=[
                    query(
                        "q",
                        {"type": "string", "minLength": 1, "maxLength": 200},
                        "what to look for, case aside",
                        required=True,
                    ),
                    query("after", STRING, "the page after this slug"),
                    limit(),
                ],
                answers={200: answer("a page, in slug order", ref("PersonPage"))},
            ),
        ),
        "/api/v1/search/messages": path(
            get=operation(
                "search_messages",
                "Messages whose text holds a text, newest first",
                tag="threads",
                parameters=[
                    query(
                        "q",
                        {"type": "string", "minLength": 1, "maxLength": 200},
                        "what to look for, case aside",
                        required=True,
                    ),
                    position("before", "the page before this position (`next`)", low=1),
                    limit(),
                ],
                answers={200: answer("a page, newest first", ref("MessagePage"))},
            ),
        ),
    }


def operator_paths() -> dict[str, Any]:
    """The operator API: every path under `/api/v1` but the agent tools'."""
    return {
        **_threads(),
        **_approvals(),
        **_roles_and_memory(),
        **_runs(),
        **_tasks(),
        **_people(),
        **_endpoints(),
        **_overview_and_search(),
    }
