"""The agent's tools, one implementation each, called with the calling run as context.

`RunTools` serves a conversation run: what it may do is worked out from that run (its
role, its thread, how far it has read). Built-in agents call its methods in process during a
turn; remote agents call the same methods by name through `call_tool` (over HTTP now, MCP later),
with the run named by its token. Agents speak of "this conversation": no tool takes a thread id.

| tool | arguments | does |
| --- | --- | --- |
| `peek_pending` | — | messages that arrived since the run last read, without consuming them |
| `store` | `payload` | remember a JSON object in this conversation (`core.model.memory`) |
| `recall` | `query?`, `limit?`, `where?` | what the role remembers that this conversation may see |
| `send_message` | `text`, `context?` | say something in this conversation now |
| `retract` | `message_id`, `reason?` | retract one of the role's own messages here |
| `task_create` | `title`, `body?`, `assignee?` | create a task (recorded as made by this run) |
| `task_get` | `task_id` | a task and its history |
| `task_list` | `status?`, `assignee?` | tasks, oldest first (at most 100) |
| `task_comment` | `task_id`, `text` | comment on a task |
| `task_update` | `task_id`, `status?`, `title?`, `body?`, `assignee?` | change a task |
| `subscribe` | `task_id` or `external_key` | watch a task (or an item of another system by |
| | | its external key, before any task has it): changes by others wake this conversation |
| `unsubscribe` | `task_id` or `external_key` | stop watching it |
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.engine.runtimes.base import PromptEvent
from core.model.errors import InvalidInput, LimitReached, NotAllowed, NotFound
from core.model.memory import check_payload, parse_recall
from core.model.runs.conversation import pending_for
from core.model.runs.run import Run
from core.model.tasks import (
    Actor,
    ActorKind,
    ExternalRef,
    Task,
    TaskChange,
    TaskEvent,
    TaskId,
    TaskStatus,
    check_body,
    check_comment,
    check_title,
    parse_assignee,
    parse_external_key,
    parse_status,
)
from core.model.timeline import EventId, ThreadId, check_reason, check_text, parse_context, rfc3339
from core.model.values import check_value
from core.storage.database import Database


class ToolBudget:
    """The tool calls one turn may make (the role's `max_tool_calls_per_turn`), counted across
    every way the run's tools are reached — in process, `POST /api/v1/tools/{name}` and MCP —
    since each of those builds its `RunTools` with the same budget. A call past the limit is
    refused with `LimitReached` (`tool_budget_spent`) before it does anything; the refusals are
    counted for the turn's transcript."""

    __slots__ = ("limit", "refused", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.refused = 0

    def spend(self, name: str) -> None:
        if self.used >= self.limit:
            self.refused += 1
            raise LimitReached(
                f"this turn has made the {self.limit} tool calls its role allows "
                f"(max_tool_calls_per_turn); {name} was not run — answer with what you have",
                code="tool_budget_spent",
            )
        self.used += 1


class RunTools:
    def __init__(
        self, database: Database, run: Run, *, read_to: int, budget: ToolBudget | None = None
    ) -> None:
        """`budget`: the running turn's, when there is one (calls outside a turn — an
        operator's token used by hand — are not counted)."""
        self._db = database
        self._run = run
        self.budget = budget
        self._thread_id = run.thread_id
        self._read_to = read_to
        self.sent = 0
        """Messages sent with `send_message` (a turn that sent one has answered)."""

    def _conversation(self) -> ThreadId:
        if self._thread_id is None:
            raise NotAllowed(
                "this run works on a task, not in a conversation", code="not_a_conversation"
            )
        return self._thread_id

    async def peek_pending(self) -> Sequence[PromptEvent]:
        role = self._run.role_address
        thread_id = self._conversation()
        page = await self._db.runs.pending(thread_id, role, after=self._read_to, limit=200)
        return pending_for(page.events, role=role)

    async def store(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        entry = await self._db.memory.store(
            self._run.role, check_payload(payload), thread_id=self._thread_id
        )
        return {"id": entry.id, "shared": not entry.thread_only}

    async def recall(
        self, query: str = "", *, limit: int | None = None, where: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        recall = parse_recall(query, where=where, limit=limit)
        entries = await self._db.memory.recall(self._run.role, recall, thread_id=self._thread_id)
        return [
            {
                "id": e.id,
                "at": rfc3339(e.at),
                "payload": dict(e.payload),
                "here": e.thread_id == self._thread_id,
            }
            for e in entries
        ]

    async def send_message(
        self, text: str, *, context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        message = await self._db.threads.post_message(
            self._conversation(), self._run.role_address, check_text(text), parse_context(context)
        )
        self.sent += 1
        return {"id": message.id, "seq": message.seq}

    async def retract(self, message_id: str, *, reason: str | None = None) -> dict[str, Any]:
        if not isinstance(message_id, str) or not message_id:
            raise InvalidInput("message_id must be a message's id", code="invalid_argument")
        retraction = await self._db.threads.retract(
            self._conversation(), EventId(message_id), self._run.role_address, check_reason(reason)
        )
        return {"id": retraction.id, "seq": retraction.seq}

    # --- subscriptions -------------------------------------------------------------------

    async def subscribe(
        self, task_id: str | None = None, *, external_key: str | None = None
    ) -> dict[str, Any]:
        """Watch a task, by its id or by its item's external key (`github:owner/repo#123`),
        even before any task refers to that item (`task_id` is null until one does)."""
        ref = _which_task(task_id, external_key)
        subscriptions = self._db.subscriptions
        if ref is None:
            added = await subscriptions.subscribe(self._run.id, _task_id(task_id))
            return {"task_id": task_id, "subscribed": True, "new": added}
        found, added = await subscriptions.subscribe_by_key(self._run.id, ref)
        return {"task_id": found, "external_key": ref.text, "subscribed": True, "new": added}

    async def unsubscribe(
        self, task_id: str | None = None, *, external_key: str | None = None
    ) -> dict[str, Any]:
        ref = _which_task(task_id, external_key)
        subscriptions = self._db.subscriptions
        if ref is None:
            removed = await subscriptions.unsubscribe(self._run.id, _task_id(task_id))
            return {"task_id": task_id, "subscribed": False, "was": removed}
        found, removed = await subscriptions.unsubscribe_by_key(self._run.id, ref)
        return {"task_id": found, "external_key": ref.text, "subscribed": False, "was": removed}

    # --- tasks: every change is recorded as made by this run ------------------------------

    @property
    def _actor(self) -> Actor:
        return Actor(kind=ActorKind.RUN, name=self._run.role_address, run_id=self._run.id)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Any tool by name, as remote agents call them (`call_tool`)."""
        return await call_tool(self, name, dict(arguments))

    async def task_create(
        self, title: str, *, body: str | None = None, assignee: str | None = None
    ) -> dict[str, Any]:
        task, _ = await self._db.tasks.create(
            title=check_title(title),
            body=check_body(body),
            assignee=parse_assignee(assignee),
            external=None,
            actor=self._actor,
        )
        return task_view(task)

    async def task_get(self, task_id: str) -> dict[str, Any]:
        task, events = await self._db.tasks.get(str(task_id))
        return {**task_view(task), "history": [task_event_view(e) for e in events]}

    async def task_list(
        self, *, status: str | None = None, assignee: str | None = None
    ) -> list[dict[str, Any]]:
        found = await self._db.tasks.list(
            status=parse_status(status) if status is not None else None,
            assignee=parse_assignee(assignee),
            limit=100,
        )
        return [task_view(t) for t in found]

    async def task_comment(self, task_id: str, text: str) -> dict[str, Any]:
        event = await self._db.tasks.comment(TaskId(str(task_id)), check_comment(text), self._actor)
        return task_event_view(event)

    async def task_update(
        self,
        task_id: str,
        *,
        status: str | None = None,
        title: str | None = None,
        body: str | None = None,
        assignee: str | None = None,
    ) -> dict[str, Any]:
        change = TaskChange(
            title=check_title(title) if title is not None else None,
            body=check_body(body) if body is not None else None,
            status=parse_status(status) if status is not None else None,
            assignee=(parse_assignee(assignee) or "") if assignee is not None else None,
        )
        task, event = await self._db.tasks.update(TaskId(str(task_id)), change, self._actor)
        return {**task_view(task), "changed": event is not None}


def _which_task(task_id: object, external_key: object) -> ExternalRef | None:
    """Exactly one of the two: None for a task id, the reference for an external key."""
    if (task_id is None) == (external_key is None):
        raise InvalidInput(
            "give either task_id (a task's id) or external_key (like github:owner/repo#123)",
            code="invalid_argument",
        )
    if external_key is None:
        return None
    try:
        return parse_external_key(external_key)
    except InvalidInput as error:
        raise InvalidInput(f"external_key: {error.message}", code=error.code) from None


def _task_id(raw: object) -> TaskId:
    if not isinstance(raw, str) or not raw:
        raise InvalidInput("task_id must be a task's id", code="invalid_argument")
    return TaskId(raw)


def task_view(task: Task) -> dict[str, Any]:
    return task.to_json()


def task_event_view(event: TaskEvent) -> dict[str, Any]:
    return event.to_json()


# --- calling a tool by name ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    call: Callable[[RunTools, dict[str, Any]], Awaitable[Any]]

    @property
    def required(self) -> list[str]:
        return list(self.input_schema.get("required", []))

    @property
    def arguments(self) -> list[str]:
        return list(self.input_schema.get("properties", {}))


def _schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


async def _peek(tools: RunTools, _args: dict[str, Any]) -> Any:
    return {"pending": [event.to_json() for event in await tools.peek_pending()]}


async def _store(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.store(args["payload"])


async def _recall(tools: RunTools, args: dict[str, Any]) -> Any:
    found = await tools.recall(
        args.get("query") or "", limit=args.get("limit"), where=args.get("where")
    )
    return {"entries": found}


async def _send(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.send_message(args["text"], context=args.get("context"))


async def _retract(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.retract(args["message_id"], reason=args.get("reason"))


async def _task_create(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.task_create(
        args["title"], body=args.get("body"), assignee=args.get("assignee")
    )


async def _task_get(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.task_get(args["task_id"])


async def _task_list(tools: RunTools, args: dict[str, Any]) -> Any:
    return {
        "tasks": await tools.task_list(status=args.get("status"), assignee=args.get("assignee"))
    }


async def _task_comment(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.task_comment(args["task_id"], args["text"])


async def _task_update(tools: RunTools, args: dict[str, Any]) -> Any:
    fields = {k: args.get(k) for k in ("status", "title", "body", "assignee")}
    return await tools.task_update(args["task_id"], **fields)


async def _subscribe(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.subscribe(args.get("task_id"), external_key=args.get("external_key"))


async def _unsubscribe(tools: RunTools, args: dict[str, Any]) -> Any:
    return await tools.unsubscribe(args.get("task_id"), external_key=args.get("external_key"))


_WHICH_TASK = _schema({"task_id": {"type": "string"}, "external_key": {"type": "string"}})


_STATUS = {"type": "string", "enum": [s.value for s in TaskStatus]}


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="peek_pending",
            description="Messages that arrived in this conversation since you last read, "
            "without consuming them: they still come with your next turn.",
            input_schema=_schema({}),
            call=_peek,
        ),
        Tool(
            name="store",
            description="Remember something in this conversation: a JSON object. It stays in "
            "this conversation unless the conversation's memory policy shares it.",
            input_schema=_schema({"payload": {"type": "object"}}, ["payload"]),
            call=_store,
        ),
        Tool(
            name="recall",
            description="What you remember that this conversation may see, newest first: "
            "entries matching every word of `query` and the `where` fields.",
            input_schema=_schema(
                {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                    "where": {"type": "object"},
                }
            ),
            call=_recall,
        ),
        Tool(
            name="send_message",
            description="Say something in this conversation now. `context` is an optional hint "
            "{kind, task?, originating_message?} stored with the message.",
            input_schema=_schema(
                {"text": {"type": "string"}, "context": {"type": "object"}}, ["text"]
            ),
            call=_send,
        ),
        Tool(
            name="retract",
            description="Retract one of your own earlier messages in this conversation.",
            input_schema=_schema(
                {"message_id": {"type": "string"}, "reason": {"type": "string"}}, ["message_id"]
            ),
            call=_retract,
        ),
        Tool(
            name="task_create",
            description="Create a task (a tracked work item people see). `assignee`: a role.",
            input_schema=_schema(
                {
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "assignee": {"type": "string"},
                },
                ["title"],
            ),
            call=_task_create,
        ),
        Tool(
            name="task_get",
            description="A task and its history (who changed what, comments).",
            input_schema=_schema({"task_id": {"type": "string"}}, ["task_id"]),
            call=_task_get,
        ),
        Tool(
            name="task_list",
            description="Tasks, oldest first, by status and assignee role.",
            input_schema=_schema({"status": _STATUS, "assignee": {"type": "string"}}),
            call=_task_list,
        ),
        Tool(
            name="task_comment",
            description="Comment on a task.",
            input_schema=_schema(
                {"task_id": {"type": "string"}, "text": {"type": "string"}}, ["task_id", "text"]
            ),
            call=_task_comment,
        ),
        Tool(
            name="task_update",
            description="Change a task's status, title, body or assignee (null: unassign).",
            input_schema=_schema(
                {
                    "task_id": {"type": "string"},
                    "status": _STATUS,
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "assignee": {"type": ["string", "null"]},
                },
                ["task_id"],
            ),
            call=_task_update,
        ),
        Tool(
            name="subscribe",
            description="Watch a task: when someone else changes it or comments on it, this "
            "conversation hears of it in its next turn. Give `task_id`, or `external_key` for "
            "an item of another system (like github:owner/repo#123), even before the gateway "
            "has a task for it: the first event about it creates the task and tells you.",
            input_schema=_WHICH_TASK,
            call=_subscribe,
        ),
        Tool(
            name="unsubscribe",
            description="Stop watching a task (by `task_id` or `external_key`).",
            input_schema=_WHICH_TASK,
            call=_unsubscribe,
        ),
    )
}


async def call_tool(tools: RunTools, name: str, arguments: object) -> Any:
    """Call the tool `name` with JSON `arguments` (an object); unknown tools and arguments,
    missing required ones, and values `core.model.values` refuses (a lone surrogate, a NUL, a number
    storage cannot hold, nesting too deep) are named in the error. Every call counts against the
    turn's budget, a bad one too (an agent looping on a wrong call is cut off all the same)."""
    if tools.budget is not None:
        tools.budget.spend(name)
    tool = TOOLS.get(name)
    if tool is None:
        raise NotFound(
            f"no tool named {name!r}; tools: {', '.join(sorted(TOOLS))}", code="tool_not_found"
        )
    if not isinstance(arguments, dict):
        raise InvalidInput("the arguments must be a JSON object", code="invalid_arguments")
    for given in arguments:
        if given not in tool.arguments:
            takes = ", ".join(tool.arguments) or "no arguments"
            raise InvalidInput(
                f"{name} has no argument {given!r}; it takes {takes}", code="unknown_argument"
            )
    for needed in tool.required:
        if needed not in arguments:
            raise InvalidInput(f"{name} needs the argument {needed!r}", code="missing_argument")
    for given, value in arguments.items():  # before any tool sees it: what storage can keep
        check_value(value, given)
    return await tool.call(tools, arguments)
