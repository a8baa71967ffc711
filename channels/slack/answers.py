"""A click on an approval's button in Slack: the person's answer, from the channel `slack`.

Bolt hands `Answers.on_click` a `block_actions` interaction whose action id names the approval
and the option (`channels/slack/approvals.py`), over HTTP at `/slack/<role>/interactivity`
(signed like events: `channels/slack/routes.py`) or over Socket Mode. It answers as the widget
does:

- who: the Slack user's person, looked up and never made: a user nobody knows yet (who never
  wrote to the bot, nor was met in a group DM of it) is refused, and so is a deactivated person;
- which approval: only one of the conversation the DM is bound to, as that person sees it — a
  click from another DM gets the same "not one of this conversation's" as an id nobody has;
- the answer: `approvals.answer(…, channel="slack")`, by core's rules. The first valid answer
  from any channel wins; a later one — a second click, Slack sending the same click again,
  another person's — is refused, saying how and by whom it was answered, and changes nothing.

The answer is committed before Slack gets its 200, as a person's message is (one read of the
person, one of the approval, one write); whatever calls Slack comes after the acknowledgement.
A refusal is told to the clicker alone, in one sentence (`chat.postEphemeral`). An answer is
shown by the delivery, which updates the request's post when `approval_resolved` reaches it: one
code path writes the post's outcome, whichever channel the answer came from.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.slack.approvals import (
    ACTIONS,
    INACTIVE_PERSON,
    UNKNOWN_PERSON,
    read_click,
    refusal,
    too_late,
)
from channels.slack.inbound import slack_identity
from core.model.approvals import ApprovalClosed
from core.model.errors import NotAllowed, NotFound, RolecallError
from core.model.participants import Address
from core.model.roles import Role
from core.model.timeline import ApprovalRequested
from core.storage.database import Database
from core.storage.slack_store import CHANNEL

log = logging.getLogger("rolecall.slack")


@dataclass(frozen=True, slots=True)
class _Clicked:
    """Who clicked which button, where."""

    team_id: str
    user_id: str
    channel_id: str
    approval_id: str
    option_id: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> _Clicked | None:
        """From a `block_actions` payload; None when its first action is not an approval's
        button, or it does not say who clicked where."""
        actions = body.get("actions")
        first = actions[0] if isinstance(actions, list) and actions else None
        click = read_click(_field(first, "action_id"))
        user = body.get("user")
        team = _field(body.get("team"), "id") or _field(user, "team_id")
        channel = _field(body.get("channel"), "id") or _field(body.get("container"), "channel_id")
        user_id = _field(user, "id")
        if click is None or not team or not channel or not user_id:
            return None
        return cls(team, user_id, channel, click.approval_id, click.option_id)


def _field(found: object, name: str) -> str | None:
    value = found.get(name) if isinstance(found, dict) else None
    return value if isinstance(value, str) and value else None


class _Refused(Exception):
    def __init__(self, told: str) -> None:
        super().__init__(told)
        self.told = told


class Answers:
    def __init__(
        self, role: Role, database: Database, names: Callable[[Address], Awaitable[str]]
    ) -> None:
        """`names`: a participant's display name (the delivery's, which it shows too)."""
        self.role = role
        self._db = database
        self._names = names
        self._telling: set[asyncio.Task[None]] = set()

    def register(self, app: AsyncApp) -> None:
        app.block_action(ACTIONS)(self.on_click)

    def close(self) -> None:
        """Stop telling: the refusals not yet told are dropped."""
        for task in list(self._telling):
            task.cancel()

    async def on_click(self, ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        """`client` is bolt's, authorized for the click's workspace."""
        clicked = _Clicked.of(body)
        told = None
        if clicked is not None:
            try:
                await self._answer(clicked)
            except _Refused as refused:
                told = refused.told
        await ack()
        if clicked is None:
            log.info("slack click to role %s ignored: not on an approval", self.role.name)
        elif told is not None:
            log.info("slack answer to approval %s refused: %s", clicked.approval_id, told)
            task = asyncio.get_running_loop().create_task(_ephemeral(client, clicked, told))
            self._telling.add(task)
            task.add_done_callback(self._telling.discard)

    async def _answer(self, clicked: _Clicked) -> None:
        """Answer as the clicker; `_Refused`, with what they are told, when it is no answer."""
        person = await self._person(clicked)
        asked = await self._approval(clicked, person)
        try:
            await self._db.approvals.answer(asked, person, clicked.option_id, channel=CHANNEL)
        except ApprovalClosed:
            _, resolved = await self._db.approvals.get(asked.id, viewer=person)
            by = resolved.by if resolved is not None else None
            by_name = await self._names(by) if by is not None else None
            resolution = resolved.resolution if resolved is not None else None
            raise _Refused(too_late(resolution, mine=by == person, by_name=by_name)) from None
        except NotAllowed as error:
            approvers = [await self._names(a) for a in asked.approvers]
            raise _Refused(refusal(error.code, error.message, approvers=approvers)) from None
        except RolecallError as error:
            raise _Refused(refusal(error.code, error.message)) from None

    async def _person(self, clicked: _Clicked) -> Address:
        person = await self._db.people.of_identity(slack_identity(clicked.team_id, clicked.user_id))
        if person is None:
            raise _Refused(refusal(UNKNOWN_PERSON, "unknown person"))
        if not person.active:
            raise _Refused(refusal(INACTIVE_PERSON, "deactivated"))
        return person.address

    async def _approval(self, clicked: _Clicked, person: Address) -> ApprovalRequested:
        """The approval, when it is one of the DM's conversation that `person` sees."""
        thread_id = await self._db.slack.thread_of(
            self.role.name, clicked.team_id, clicked.channel_id
        )
        if thread_id is None:  # a DM nobody wrote in: no conversation has approvals here
            raise _Refused(refusal("approval_not_found", "no conversation"))
        try:
            asked, _ = await self._db.approvals.get(
                clicked.approval_id, thread_id=thread_id, viewer=person
            )
        except NotFound as error:
            raise _Refused(refusal(error.code, error.message)) from None
        return asked


async def _ephemeral(client: AsyncWebClient, clicked: _Clicked, text: str) -> None:
    """Only the clicker sees it, in the DM where they clicked."""
    try:
        await client.chat_postEphemeral(channel=clicked.channel_id, user=clicked.user_id, text=text)
    except (SlackApiError, TimeoutError, aiohttp.ClientError) as error:
        log.warning("could not tell a slack user why their answer was refused: %s", error)
