"""What one turn's A2A events say, read as they come (pure: protocol values in, updates out).

A turn sends one message; the agent answers with a message, or with a task whose events
stream in (streaming) or arrive as the task's last state (a plain send). The end of the turn
is decided by what the agent ends on:

    a message (no task)                   ANSWERED   its text is the reply
    task completed                        ANSWERED   the artifacts' text is the reply, else the
                                                     status message's
    task input-required, auth-required    ASKED      the status message (after any artifact
                                                     text) is the reply: it asks the person; the
                                                     task stays open for the next turn's message
    task failed, rejected                 FAILED     `AgentError` with the agent's reason (the
                                                     host retries the turn)
    task canceled                         CANCELLED  no reply; a `cancelled` step says why
    anything else, or nothing             the turn fails: the agent stopped before an end

Along the way, artifact text as it grows comes out as `ReplyChunk` deltas (the reply being
written), and every status the task reaches as a `Step("status", …)` for the transcript. An
artifact's text is its text parts joined as they are (appended chunks are pieces of one text);
several artifacts are separated by a blank line; a message's text parts by a line break.
Events after the end are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)

from core.engine.runtimes.base import AgentError, ReplyChunk, Step, Update


class Ending(StrEnum):
    ANSWERED = "answered"
    ASKED = "asked"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class End:
    ending: Ending
    text: str
    """The reply (answered), the question (asked), or the agent's reason (failed, cancelled)."""


_ENDINGS: dict[int, Ending] = {
    TaskState.TASK_STATE_COMPLETED: Ending.ANSWERED,
    TaskState.TASK_STATE_INPUT_REQUIRED: Ending.ASKED,
    TaskState.TASK_STATE_AUTH_REQUIRED: Ending.ASKED,
    TaskState.TASK_STATE_FAILED: Ending.FAILED,
    TaskState.TASK_STATE_REJECTED: Ending.FAILED,
    TaskState.TASK_STATE_CANCELED: Ending.CANCELLED,
}

_ASKS_WITHOUT_WORDS = {
    TaskState.TASK_STATE_INPUT_REQUIRED: "The agent needs more from you to go on.",
    TaskState.TASK_STATE_AUTH_REQUIRED: "The agent needs an authorization to go on.",
}


def state_name(state: int) -> str:
    """The protocol's name of a task state: `input-required`, `completed`, …"""
    try:
        name = str(TaskState.Name(state))
    except ValueError:
        return f"unknown ({state})"
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def message_text(message: Message) -> str:
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


def artifact_text(artifact: Artifact) -> str:
    return "".join(part.text for part in artifact.parts if part.HasField("text"))


class TurnReading:
    """The events of one turn, read in order. `context_id` and `task_id` are what the agent
    has said so far (starting from what the turn's message named); `end` is set once the turn
    has ended."""

    def __init__(self, *, context_id: str | None = None, task_id: str | None = None) -> None:
        self.context_id = context_id
        self.task_id = task_id
        self.events = 0
        self.end: End | None = None
        self._state: int | None = None
        self._artifacts: dict[str, str] = {}
        self._drafted = ""

    @property
    def in_flight(self) -> str | None:
        """The task the agent is working on for this turn (what a cancel stops), if any."""
        return self.task_id if self.end is None else None

    def read(self, event: StreamResponse) -> list[Update]:
        """What the event means for the turn: pieces of the reply, steps for the transcript."""
        if self.end is not None:
            return []
        self.events += 1
        if event.HasField("message"):
            return self._message(event.message)
        if event.HasField("task"):
            return self._task(event.task)
        if event.HasField("artifact_update"):
            update = event.artifact_update
            self._ids(update.context_id, update.task_id)
            self._artifact(update.artifact, append=update.append)
            return self._chunk()
        if event.HasField("status_update"):
            update = event.status_update
            self._ids(update.context_id, update.task_id)
            return self._status(update.status)
        return []

    def finish(self) -> End:
        """How the turn ended; raises `AgentError` when the agent stopped short of an end."""
        if self.end is not None:
            return self.end
        if self._state is None:
            raise AgentError("the agent answered nothing: no message and no task")
        raise AgentError(
            f"the agent stopped before its task {self.task_id} ended "
            f"(it was {state_name(self._state)})"
        )

    # --- the events -----------------------------------------------------------------------

    def _message(self, message: Message) -> list[Update]:
        self._ids(message.context_id, message.task_id or None)
        if message.role == Role.ROLE_USER:
            return []
        self.end = End(Ending.ANSWERED, message_text(message))
        return []

    def _task(self, task: Task) -> list[Update]:
        """The task as it is: the first event of a stream, or the whole answer of a send."""
        self._ids(task.context_id, task.id)
        self._artifacts = {a.artifact_id: artifact_text(a) for a in task.artifacts}
        steps = self._status(task.status)
        return steps if self.end is not None else [*self._chunk(), *steps]

    def _artifact(self, artifact: Artifact, *, append: bool) -> None:
        text = artifact_text(artifact)
        before = self._artifacts.get(artifact.artifact_id, "") if append else ""
        self._artifacts[artifact.artifact_id] = before + text

    def _status(self, status: TaskStatus) -> list[Update]:
        self._state = status.state
        said = message_text(status.message) if status.HasField("message") else ""
        name = state_name(status.state)
        steps: list[Update] = [Step("status", f"{name}: {said}" if said else name)]
        ending = _ENDINGS.get(status.state)
        if ending is Ending.ANSWERED:
            self.end = End(ending, self._reply() or said)
        elif ending is Ending.ASKED:
            question = said or _ASKS_WITHOUT_WORDS[status.state]
            self.end = End(ending, "\n\n".join(t for t in (self._reply(), question) if t))
        elif ending is Ending.FAILED:
            self.end = End(ending, said or f"the agent's task was {name}, with no reason given")
        elif ending is Ending.CANCELLED:
            self.end = End(ending, said or "the agent's task was canceled")
        return steps

    # --- ids and the reply being written --------------------------------------------------

    def _ids(self, context_id: str, task_id: str | None) -> None:
        if context_id:
            self.context_id = context_id
        if task_id:
            self.task_id = task_id

    def _reply(self) -> str:
        return "\n\n".join(text for text in self._artifacts.values() if text)

    def _chunk(self) -> list[Update]:
        """The reply's new text since the last chunk. Text that was replaced rather than
        extended cannot be unsaid: no chunk then, and the whole reply at the end corrects it."""
        whole = self._reply()
        if whole == self._drafted or not whole.startswith(self._drafted):
            return []
        delta, self._drafted = whole[len(self._drafted) :], whole
        return [ReplyChunk(delta)]
