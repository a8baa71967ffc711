"""Slack events into the timeline.

A person's message in the role's DM becomes their message in the conversation `{person, role}`
(a group DM with the bot: the thread of all its people and the role), committed together with
the record of its delivery before Slack gets its 200 — a retry finds the record and adds
nothing. An edit becomes a new message that says which one it replaces; a deletion, a
retraction by the person. Messages from bots (ours included) are recorded as seen and nothing
more. Three words in a DM are commands, not messages: `new` (start fresh), `help`, and
`link <code>` (join this Slack identity to the person a link code belongs to).

Who a Slack user is: their identity `slack:<team>:<user>`'s person, made on first contact from
their `users.info` profile. In a workspace the operator allows (`email_link_teams`) a first
contact whose email Slack says is confirmed (`is_email_confirmed`, with `users:read.email`) joins
the one active person with that email instead, so that person's conversation continues in the DM
(`core.model.people`). Only such an email is stored on a person made from Slack: any other could
later
be matched by someone else's.

A message whose text `core.model.values` does not accept (a lone surrogate, a NUL — which Slack's
clients never write, but a JSON escape can name) is refused politely, not cleaned: the event is
recorded as seen and acknowledged (so Slack does not send it again), nothing reaches the
timeline, and the person is told in the DM why. Cleaning would put words in the timeline the
person did not write; a 4xx would have Slack retry the event three times and then drop it with
no word to anyone. The rest of the event was checked at the route (`channels/slack/verify.py`).

An erased person (`core.model.erasure`) writes nothing more: their identity is gone, so the same
Slack user is looked up again (`on_commit` forgets them; a delivery still naming them is refused,
`person_erased`, and looked up again once) and is someone new, in a new conversation in the
same DM.

Traced (`core.tracing`), a `message` event is a `rolecall.slack.event` span: within the request's
span over HTTP, a trace of its own over Socket Mode.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.slack.delivery import Delivery
from core import tracing
from core.engine.host.host import RunHost
from core.model.errors import RolecallError
from core.model.participants import Address, ParticipantSet
from core.model.people import Identity, check_email, parse_identity
from core.model.roles import Role
from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent, Erased, ThreadId
from core.model.values import clean_text, text_problem
from core.storage.database import Database
from core.storage.slack_store import (
    RetractFromSlack,
    SayFromSlack,
    SlackBinding,
    SlackDelivery,
)

log = logging.getLogger("rolecall.slack")

KEPT = 10_000
"""People and DMs remembered in memory, per role (the least recently used are forgotten)."""

_LINK = re.compile(r"^\s*link\s+([A-Za-z0-9 -]{8,12})\s*$", re.IGNORECASE)
_NEW = re.compile(r"^\s*new\s*$", re.IGNORECASE)
_HELP = re.compile(r"^\s*help\s*$", re.IGNORECASE)
UNREADABLE = frozenset({"channel_not_found", "not_in_channel", "missing_scope"})
"""Slack's answers when the DM's members cannot be read, and will not be on a retry: the
message is recorded as seen and dropped (logged)."""
_MESSAGE_SUBTYPES = frozenset({None, "file_share", "thread_broadcast", "me_message"})


def help_text(role: Role) -> str:
    about = f" {role.description}" if role.description else ""
    return (
        f"I'm {role.display_name}.{about}\n"
        "Write to me here as you would anywhere: this DM is our conversation, the same one you "
        "see in the web widget once your accounts are linked.\n"
        "• `new` starts fresh (earlier messages are archived).\n"
        "• `link <code>` joins this Slack account to you elsewhere: get a code in the web "
        "widget (Link → Get a link code) and send it here."
    )


@dataclass(frozen=True, slots=True)
class _Said:
    user: str
    text: str
    ts: str
    thread_ts: str | None
    replaces: str | None = None
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class _Profile:
    """What `users.info` says of a Slack user (no email without `users:read.email`)."""

    name: str
    email: str | None = None
    email_confirmed: bool = False


class Inbound:
    def __init__(
        self,
        role: Role,
        database: Database,
        host: RunHost,
        delivery: Delivery,
        *,
        email_link_teams: Collection[str] = frozenset(),
    ) -> None:
        """`delivery` is told when a DM becomes (or changes) which conversation it is, and what
        was last heard in it. `email_link_teams`: the Slack team ids whose people join a person
        by their confirmed email on first contact (none: nobody is linked by email)."""
        self._delivery_worker = delivery
        self._email_link_teams = frozenset(team.upper() for team in email_link_teams)
        self._warned_no_email = False
        self.role = role
        self._db = database
        self._host = host
        self._people: OrderedDict[tuple[str, str], Address] = OrderedDict()
        self._threads: OrderedDict[tuple[str, str], ThreadId] = OrderedDict()

    def on_commit(self, events: Sequence[AnyEvent], _task_events: Sequence[TaskEvent]) -> None:
        """A person erased is no one's any more: who wrote from Slack, and in which thread, is
        looked up again (their identity is gone: the same Slack user is someone new)."""
        for event in events:
            if isinstance(event, Erased):
                for key in [k for k, v in self._people.items() if v == event.participant]:
                    del self._people[key]
                for key in [k for k, v in self._threads.items() if v == event.thread_id]:
                    del self._threads[key]

    def register(self, app: AsyncApp) -> None:
        app.event("message")(self.on_message)
        # Every other event the app may be sent is acknowledged and recorded, never a 404
        # (which Slack would retry).
        app.event(re.compile(".*"))(self.on_other)

    # --- events -------------------------------------------------------------------------------

    async def on_other(self, body: dict[str, Any]) -> None:
        if body.get("event_id"):
            await self._db.slack.seen(self._delivery(body, body.get("event", {})))

    async def on_message(
        self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient
    ) -> None:
        """A `message` event; `client` is bolt's, authorized for the event's workspace."""
        if not tracing.on():
            await self._on_message(body, event, client)
            return
        delivery = self._delivery(body, event)
        attributes = {
            "rolecall.role": self.role.name,
            "rolecall.slack.event_id": delivery.event_id,
            "rolecall.slack.team": delivery.team_id,
            "rolecall.slack.channel": delivery.channel_id,
        }
        with tracing.span("rolecall.slack.event", attributes=attributes):
            await self._on_message(body, event, client)

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient
    ) -> None:
        delivery = self._delivery(body, event)
        said = _said(event)
        if said is None or event.get("channel_type") not in ("im", "mpim"):
            await self._db.slack.seen(delivery)
            return
        if (problem := text_problem(said.text)) is not None:
            if await self._db.slack.seen(delivery):  # told once, not again on Slack's retry
                log.info("slack message %s refused: its text %s", delivery.event_id, problem[1])
                await _tell(
                    client,
                    delivery.channel_id,
                    f"That was not recorded: your message {problem[1]}.",
                )
            return
        plain = not said.deleted and not said.replaces and event.get("channel_type") == "im"
        if plain and await self._command(client, delivery, said):
            return
        for attempt in range(2):
            try:
                await self._record(client, delivery, said, event.get("channel_type") == "mpim")
                return
            except RolecallError as error:
                if attempt == 0:  # who and where may have changed elsewhere (a link, a merge):
                    self._forget(delivery, said.user)  # look them up again, once
                    continue
                await self._db.slack.seen(delivery)  # a rule refused it: say why
                log.info("slack message refused: %s", error.message)
                await _tell(client, delivery.channel_id, f"That was not recorded: {error.message}")
                return
            except SlackApiError as error:
                code = (
                    error.response.data.get("error")
                    if isinstance(error.response.data, dict)
                    else None
                )
                if code not in UNREADABLE:
                    raise  # Slack failing for now: not recorded, and Slack sends it again
                await self._db.slack.seen(delivery)  # no retry changes it
                log.info(
                    "slack message %s in %s dropped: %s",
                    delivery.event_id,
                    delivery.channel_id,
                    code,
                )
                return

    async def _record(
        self, client: AsyncWebClient, delivery: SlackDelivery, said: _Said, group: bool
    ) -> None:
        author = await self._person(client, delivery.team_id, said.user)
        thread_id = await self._thread(client, delivery, author, group)
        if said.deleted:
            await self._db.slack.retract(RetractFromSlack(thread_id, delivery, author, said.ts))
            return
        self._delivery_worker.heard(thread_id, said.thread_ts or said.ts)
        message = await self._db.slack.say(
            SayFromSlack(
                thread_id,
                delivery,
                author,
                said.text,
                said.ts,
                thread_ts=said.thread_ts,
                replaces=said.replaces,
            )
        )
        if message is not None:  # None: a retry, recorded before
            self._delivery_worker.said(message.id, said.thread_ts or said.ts)

    def _forget(self, delivery: SlackDelivery, user: str) -> None:
        self._people.pop((delivery.team_id, user), None)
        self._threads.pop((delivery.team_id, delivery.channel_id), None)

    # --- commands -----------------------------------------------------------------------------

    async def _command(self, client: AsyncWebClient, delivery: SlackDelivery, said: _Said) -> bool:
        """Handle `new`, `help` and `link <code>`; False when the text is a message."""
        text = said.text
        if not (_NEW.match(text) or _HELP.match(text) or _LINK.match(text)):
            return False
        if not await self._db.slack.seen(delivery):
            return True  # a retry of a command already carried out
        if _HELP.match(text):
            await _tell(client, delivery.channel_id, help_text(self.role))
        elif _NEW.match(text):
            author = await self._person(client, delivery.team_id, said.user)
            thread_id = await self._thread(client, delivery, author, False)
            run, _ = await self._db.runs.ensure_conversation_run(thread_id, self.role.name)
            await self._host.start_fresh(run.id)
        elif match := _LINK.match(text):
            await self._link(client, delivery, said.user, match.group(1))
        return True

    async def _link(
        self, client: AsyncWebClient, delivery: SlackDelivery, user: str, code: str
    ) -> None:
        identity = slack_identity(delivery.team_id, user)
        try:
            person = await self._db.people.redeem(code, identity)
        except RolecallError as error:
            await _tell(client, delivery.channel_id, f"That code did not work: {error.message}")
            return
        self._forget(delivery, user)
        await self._thread(client, delivery, person.address, False)  # their conversation now
        await _tell(
            client,
            delivery.channel_id,
            f"Linked: you are {person.display_name} here too. This DM now continues that "
            "conversation.",
        )

    # --- who and where ------------------------------------------------------------------------

    def _delivery(self, body: dict[str, Any], event: dict[str, Any]) -> SlackDelivery:
        team = body.get("team_id") or event.get("team") or ""
        return SlackDelivery(
            event_id=str(body.get("event_id") or f"{event.get('channel')}:{event.get('ts')}"),
            role=self.role.name,
            team_id=str(team),
            channel_id=str(event.get("channel", "")),
        )

    async def _person(self, client: AsyncWebClient, team: str, user: str) -> Address:
        key = (team, user)
        if (known := self._people.get(key)) is not None:
            self._people.move_to_end(key)
            return known
        profile = await _profile(client, user)
        verified = self._verified_email(team, profile)
        person = await self._db.people.resolve(
            slack_identity(team, user),
            display_name=profile.name,
            email=verified,
            join_by_email=verified is not None,
        )
        self._people[key] = person.address
        while len(self._people) > KEPT:
            self._people.popitem(last=False)
        return person.address

    def _verified_email(self, team: str, profile: _Profile) -> str | None:
        """The user's email when it may link them: their workspace is allowed and Slack says
        the address is confirmed; else None."""
        if team.upper() not in self._email_link_teams:
            return None
        if profile.email is None and not self._warned_no_email:
            self._warned_no_email = True  # once: every person of the workspace would say it
            log.warning(
                "slack: users.info gives no email in workspace %s, which may link people by "
                "email: does role %s's app have the users:read.email scope (rolecall slack "
                "manifest %s --email-link)?",
                team,
                self.role.name,
                self.role.name,
            )
        return profile.email if profile.email_confirmed else None

    async def _thread(
        self, client: AsyncWebClient, delivery: SlackDelivery, author: Address, group: bool
    ) -> ThreadId:
        key = (delivery.team_id, delivery.channel_id)
        if (known := self._threads.get(key)) is not None:
            return known
        members = [author, self.role.address]
        if group:
            members += await self._group_members(client, delivery, author)
        thread, _ = await self._db.threads.resolve(ParticipantSet.of(members))
        binding = await self._db.slack.bind(
            self.role.name, SlackBinding(delivery.team_id, delivery.channel_id, thread.id)
        )
        self._delivery_worker.bound(binding)
        self._threads[key] = thread.id
        while len(self._threads) > KEPT:
            self._threads.popitem(last=False)
        return thread.id

    async def _group_members(
        self, client: AsyncWebClient, delivery: SlackDelivery, author: Address
    ) -> list[Address]:
        answer = await client.conversations_members(channel=delivery.channel_id)
        bot = (await client.auth_test()).get("user_id")
        people = []
        for user in answer.get("members") or []:
            if user != bot:
                people.append(await self._person(client, delivery.team_id, str(user)))
        return [p for p in people if p != author]


def slack_identity(team: str, user: str) -> Identity:
    """A Slack user's identity: `slack:<team>:<user id>` (the team id in lower case)."""
    return parse_identity(f"slack:{team.lower()}:{user}")


async def _tell(client: AsyncWebClient, channel: str, text: str) -> None:
    """A word from the gateway, not a message of the conversation."""
    try:
        await client.chat_postMessage(channel=channel, text=text)
    except SlackApiError as error:
        log.warning("could not answer in slack: %s", error.response.get("error"))


async def _profile(client: AsyncWebClient, user: str) -> _Profile:
    """A Slack user's name, and their email (as far as the app's scopes show it, and only when
    it looks like one) with whether Slack says it is confirmed."""
    try:
        answer = await client.users_info(user=user)
    except SlackApiError:
        return _Profile(user)
    info = answer.get("user") or {}
    profile = info.get("profile") or {}
    name = profile.get("display_name") or info.get("real_name") or info.get("name") or user
    try:
        email = check_email(profile.get("email") or None)
    except RolecallError:  # not an address, or too long: as if there were none
        email = None
    return _Profile(
        name=clean_text(str(name)).strip() or user,  # a name to show: mended, not refused
        email=email,
        email_confirmed=email is not None and info.get("is_email_confirmed") is True,
    )


def _said(event: dict[str, Any]) -> _Said | None:
    """What a person did, from a `message` event; None for bots' messages and other subtypes."""
    subtype = event.get("subtype")
    if subtype == "message_changed":
        message = event.get("message") or {}
        if message.get("bot_id") or not message.get("user"):
            return None
        if message.get("text") == (event.get("previous_message") or {}).get("text"):
            return None  # Slack unfurled a link or the like: nothing the person changed
        return _Said(
            user=message["user"],
            text=message.get("text") or "",
            ts=message["ts"],
            thread_ts=message.get("thread_ts"),
            replaces=message["ts"],
        )
    if subtype == "message_deleted":
        previous = event.get("previous_message") or {}
        if previous.get("bot_id") or not previous.get("user"):
            return None
        ts = str(event.get("deleted_ts") or previous.get("ts") or "")
        return _Said(user=previous["user"], text="", ts=ts, thread_ts=None, deleted=True)
    if subtype not in _MESSAGE_SUBTYPES or event.get("bot_id") or not event.get("user"):
        return None
    text = event.get("text") or ""
    if not text.strip():
        return None
    return _Said(user=event["user"], text=text, ts=event["ts"], thread_ts=event.get("thread_ts"))
