"""The subscription tools: `subscribe` and `unsubscribe` — watch a task, so that changes by
others wake this conversation. A task is named by its id, or by its item's external key
(`github:owner/repo#123`), even before any task refers to that item (`task_id` is null until
one does): exactly one of the two, as their schema says (`exactly_one`)."""

from __future__ import annotations

from typing import Annotated, Any

from core.engine.tools.base import Arg, Effects, tool
from core.engine.tools.context import ToolContext
from core.engine.tools.results import subscription
from core.model.errors import InvalidInput
from core.model.tasks import ExternalRef, TaskId, parse_external_key

_TASK_ID = Arg(doc="the task's id; give this or `external_key`, not both")
_EXTERNAL_KEY = Arg(
    doc="instead of `task_id`: an item of another system, `<source>:<key>` like "
    "`github:owner/repo#123`, whether or not a task refers to it yet"
)


class SubscriptionTools(ToolContext):
    @tool(
        description="Watch a task: when someone else changes it or comments on it, this "
        "conversation hears of it in its next turn. Give `task_id`, or `external_key` for "
        "an item of another system (like github:owner/repo#123), even before the gateway "
        "has a task for it: the first event about it creates the task and tells you.",
        result='`{"task_id", "subscribed": true, "new"}`: from now on, changes to the task by '
        "anyone but this run wake the conversation",
        output=subscription(True, "new", "false: the conversation already watched it"),
        effects=Effects(idempotent=True),
        exactly_one=True,
    )
    async def subscribe(
        self,
        task_id: Annotated[str | None, _TASK_ID] = None,
        *,
        external_key: Annotated[str | None, _EXTERNAL_KEY] = None,
    ) -> dict[str, Any]:
        ref = _which_task(task_id, external_key)
        subscriptions = self._db.subscriptions
        if ref is None:
            added = await subscriptions.subscribe(self._run.id, _task_id(task_id))
            return {"task_id": task_id, "subscribed": True, "new": added}
        found, added = await subscriptions.subscribe_by_key(self._run.id, ref)
        return {"task_id": found, "external_key": ref.text, "subscribed": True, "new": added}

    @tool(
        description="Stop watching a task (by `task_id` or `external_key`).",
        result='`{"task_id", "subscribed": false, "was"}`',
        output=subscription(False, "was", "the conversation watched it until now"),
        effects=Effects(idempotent=True),
        exactly_one=True,
    )
    async def unsubscribe(
        self,
        task_id: Annotated[str | None, _TASK_ID] = None,
        *,
        external_key: Annotated[str | None, _EXTERNAL_KEY] = None,
    ) -> dict[str, Any]:
        ref = _which_task(task_id, external_key)
        subscriptions = self._db.subscriptions
        if ref is None:
            removed = await subscriptions.unsubscribe(self._run.id, _task_id(task_id))
            return {"task_id": task_id, "subscribed": False, "was": removed}
        found, removed = await subscriptions.unsubscribe_by_key(self._run.id, ref)
        return {"task_id": found, "external_key": ref.text, "subscribed": False, "was": removed}


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
