"""The timeline into Slack: one delivery worker per role's Slack app.

The worker reads committed events after its own cursor (a position of the event stream, kept in
the database) and acts on those of conversations bound to a DM:

- the role's message is posted — in the Slack thread of the person's message it answers
  (`in_reply_to`, recorded from what caused the turn that wrote it), at the top level when it is
  the role's initiative (a turn woken by task news) or answers something said elsewhere;
- a message a person wrote in another channel (the widget, the API) is posted as quoted context,
  so the DM stays a complete record; people's own Slack messages are already there;
- a retraction of a message we posted deletes it (`chat.delete`), or, when Slack refuses,
  replaces its text with a retraction notice;
- a person's erasure (`erased`, `core.model.erasure`) deletes every post we made for the thread
  — in their conversation all of them: the role's replies, the quoted copies of what they said
  elsewhere, approval requests, notes; in a group thread the posts of their messages — then
  forgets the thread's posts and, for a conversation, the DM's binding, so nothing more of the old
  thread reaches the DM (the same Slack user who writes again is a new person, in a new
  conversation, in the same DM). A post already gone (a page done again after a failure or a
  restart) answers `message_not_found`: done. A post whose ts was never recorded (an intent
  left by a crash) is looked for in the DM's history first. The person's own Slack messages stay:
  Slack lets only a user token delete a user's messages, and the app holds a bot token. A
  tombstone (an erased message) is never posted;
- the gateway's notes ("a fresh session started", "the role did not answer") are posted in italics;
- an approval's request is posted with a button per option (`channels/slack/approvals.py`), like
  a message (the outbox below); its resolution updates that post (`chat.update`): the buttons
  give way to the outcome. The update is the same whenever it is made, so a page done again
  makes it again, harmlessly; a request never posted (the DM was bound after it) is not updated.

Each post is made exactly once, across failures and crashes, by an outbox: the intent to post an
event is committed before `chat.postMessage` (`IntendToPost`), and the post carries the event id
in its message metadata (`{event_type: rolecall_message, event_payload: {id}}`), which Slack
keeps with the message. The `ts` Slack answers is recorded, and the intent deleted, in one
transaction; the cursor moves past the page after that. A post that may have reached Slack
without its ts being recorded — its answer never came (a timeout, a dropped connection, a 5xx),
or an intent was found already there (a crash, a cancelled attempt, another replica) — is looked
for in the DM's history (`_find`, by the event id in the metadata) before it is posted again;
while that history cannot be read, nothing is posted. What is left (docs/slack.md): a post Slack
accepted but does not show in its history yet, or that is further back than `FIND_PAGES` pages.
Posts to one channel are paced (`pace` seconds apart); 429s are waited out by the SDK's retry
handler.

A reply names the message it answers (`in_reply_to`); that message's Slack thread is mostly
known without a read: the worker goes through the stream in order, so for each conversation it
knows the latest message not written by the role before each reply (`_latest`), and the inbound
handler tells it the Slack thread of each person's message it committed (`said`). Any other
answered message — in a conversation not followed since the worker started, or since it was
last bound to a DM, or after a failed page — is looked up in the database.
Whether a message was posted already is always read: after a restart, a failure, or by another
replica's worker (each replica's worker goes through the whole stream).

Replicas (`channels.edge.leasing`): every replica runs the role's worker, but only the holder of
the role's lease (`LeaseKind.SLACK`, the role's name) delivers; the others ask for it every
`retry_every` seconds and take over when it is free or expired. Whenever the lease is (re)claimed
the cursor and the bindings are read again (another replica delivered meanwhile); while it holds
the lease the worker is woken by every commit and looks up the DMs of threads it does not know
(bound through another replica). The intent to post and the cursor's move name the fence: a
replica that lost the lease stops at the refusal (`LeaseLost`), before posting. Replies are
streamed (`Streams`) only by the holder, and only for the turns it runs itself.

Each post is made with the bot token of the DM's workspace (`Clients`): the one token of an app
installed in one workspace, or the workspace's installation's. A workspace the app is no longer
installed in takes nothing: its messages are skipped (and logged), the others' go on. Every
refusal Slack answers a post, update or deletion with (`token_revoked`, `channel_not_found`, …)
is written as the workspace's latest (`SlackRefused`), which the operator API shows as the
workspace's health (`GET /api/v1/slack/{role}/workspaces`); a call Slack never answered is only
logged.

Traced (`core.tracing`), each post is a `rolecall.slack.post` span in the trace of the commit that
appended its event (a trace of its own when that commit is not known here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.edge.leasing import Held, Leasing
from channels.slack.approvals import request_message, resolved_message
from channels.slack.apps import Clients, NotInstalled
from channels.slack.mrkdwn import to_mrkdwn
from channels.slack.streams import Streams
from core import tracing
from core.model.errors import NotFound
from core.model.leases import Fence, LeaseKind, LeaseLost
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.roles import Role
from core.model.tasks import TaskEvent
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    EventId,
    Message,
    Retraction,
    SystemNote,
    ThreadId,
)
from core.model.values import clean_text
from core.storage.database import Database
from core.storage.errors import StorageUnavailable
from core.storage.slack_store import (
    CHANNEL,
    ErasedPost,
    PostedToSlack,
    SlackBinding,
    SlackErasure,
)

log = logging.getLogger("rolecall.slack")

PAGE = 200
METADATA_TYPE = "rolecall_message"
RETRACTED_NOTICE = "_This message was retracted._"
ERASED_NOTICE = "_This message was erased._"
POST_ATTEMPTS = 5
RETRY_PAUSE = 1.0
FIND_PAGES = 3
"""Pages of the DM's history (or of the thread's replies) looked through for a post that may
have reached Slack: `FIND_PAGE` messages each (the DM's history newest first, a thread's replies
oldest first)."""
FIND_PAGE = 200
MAYBE_TAKEN = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout"})
"""Slack's answers that say it may have acted on the call before it failed (like a 5xx)."""
PERMANENT = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "msg_too_long",
        "no_text",
        "invalid_blocks",
    }
)
"""Slack's answers about the message or its channel that no retry changes: the message is
skipped (and logged). Anything else — a revoked token, a missing scope, Slack being down — is
retried with backoff and holds the role's delivery until it is fixed: nothing is lost. (An app
installed over OAuth looks a refused token up again, and skips a workspace it is no longer
installed in: `Clients`.)"""
NOT_UPDATED = PERMANENT | {"message_not_found", "cant_update_message", "edit_window_closed"}
"""Slack's answers to an update of a post that no retry changes: the post stays as it is."""
NOT_DELETED = PERMANENT | {"cant_delete_message", "compliance_exports_prevent_deletion"}
"""Slack's answers to a deletion of a post that no retry changes: the post's text is replaced
with a notice instead, if Slack takes that."""
NOTE_EVERY = 60.0
"""Seconds before the same refusal in a workspace is written again (a delivery waiting on a
revoked token retries every few seconds); a different one, or one after a post went through,
is written at once."""
DMS_AT_ONCE = 16
"""DMs posted to at the same time (each DM's own posts stay in order and paced)."""
STATUS_AFTER = 1.0
"""Seconds a turn runs before the DM shows the role is working."""


@dataclass
class _Post:
    text: str
    thread_ts: str | None
    blocks: list[dict[str, Any]] | None = None


class SlackUnavailable(Exception):
    """A post Slack did not take in `POST_ATTEMPTS` attempts (Slack down, a revoked token): the
    delivery stops at it, the cursor stays, and the page is gone through again."""


def _code(error: SlackApiError) -> str | None:
    """Slack's error code, if its answer was JSON (an outage may answer an HTML page)."""
    data = error.response.data
    return str(data.get("error")) if isinstance(data, dict) and data.get("error") else None


def _unavailable(error: Exception) -> SlackUnavailable | None:
    """`error` when it is Slack not taking a post — alone, or as all a task group raised."""
    if isinstance(error, SlackUnavailable):
        return error
    if isinstance(error, ExceptionGroup):
        matched, rest = error.split(SlackUnavailable)
        if matched is not None and rest is None:
            first = matched.exceptions[0]
            return _unavailable(first) if isinstance(first, Exception) else None
    return None


def _lost(error: Exception) -> LeaseLost | None:
    """`error` when it is the lease found lost — alone, or among what a task group raised."""
    if isinstance(error, LeaseLost):
        return error
    if isinstance(error, ExceptionGroup) and (found := error.subgroup(LeaseLost)) is not None:
        first = found.exceptions[0]
        return _lost(first) if isinstance(first, Exception) else None
    return None


def _maybe_taken(error: SlackApiError) -> bool:
    """Slack failed in a way that says it may have acted on the call (a 5xx, `internal_error`)."""
    return error.response.status_code >= 500 or _code(error) in MAYBE_TAKEN


@dataclass(frozen=True, slots=True)
class _Latest:
    """The latest message of a conversation not written by the role, as the worker found it in
    the stream: what a reply after it answers."""

    position: int
    message_id: EventId
    channel: str | None
    thread_ts: str | None
    """Its Slack thread, when the inbound handler told it (`Delivery.said`)."""


class _Unread(Exception):
    """The DM's history could not be read: whether a post reached Slack is not known."""


_ByDm = dict[str, list[tuple[SlackBinding, AnyEvent, _Latest | None]]]
"""A page's events to deliver, by DM."""

SAID_KEPT = 100_000
"""Slack threads of people's messages told but not yet come to, kept at most."""


class Delivery:
    def __init__(
        self,
        role: Role,
        database: Database,
        clients: Clients,
        *,
        pace: float = 1.0,
        leasing: Leasing | None = None,
    ) -> None:
        self.role = role
        self._db = database
        self._leasing = leasing or Leasing.sole()
        self._held: Held | None = None
        """The lease as the worker last delivered under it (None: not held)."""
        self._clients = clients
        self._pace = pace
        self._bindings: dict[ThreadId, SlackBinding] = {}
        self._last_post: dict[str, float] = {}
        self._showing: dict[ThreadId, asyncio.TimerHandle] = {}
        self._shown: set[ThreadId] = set()
        self._calls: set[asyncio.Task[None]] = set()
        self._heard: dict[ThreadId, str] = {}
        """The ts of the latest Slack message heard in each conversation (for "working…")."""
        self._said: dict[EventId, str] = {}
        """The Slack thread of each person's message the inbound handler committed, until the
        worker comes to it in the stream."""
        self._latest: dict[ThreadId, _Latest] = {}
        self._names: dict[Address, str] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.cursor = 0
        """Events up to this position have been delivered."""
        self._at_once = asyncio.Semaphore(DMS_AT_ONCE)
        self._noted: dict[str, tuple[str, float]] = {}
        """The refusal last written for each workspace, and when (`_note`)."""
        self.streams = Streams(role.name, clients, binding=self._streamed, heard=self._heard.get)
        """Replies shown as they are written; the host's draft listener is `streams.on_draft`."""

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        for binding in await self._db.slack.bindings(self.role.name):
            self._bindings[binding.thread_id] = binding
        cursor = await self._db.slack.cursor(self.role.name)
        if cursor is None:  # the first start: what was said before is not news to Slack
            cursor = await self._db.threads.head()
            await self._db.slack.advance(self.role.name, cursor)
        self.cursor = cursor
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name=f"rolecall-slack-{self.role.name}")

    async def stop(self) -> None:
        for pending in self._showing.values():
            pending.cancel()
        for call in list(self._calls):
            call.cancel()
        await self.streams.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # --- what it is told ----------------------------------------------------------------------

    def bound(self, binding: SlackBinding) -> None:
        """A DM is (now) this conversation."""
        if self._bindings.get(binding.thread_id) == binding:
            return
        for thread_id, known in list(self._bindings.items()):
            if known.channel_id == binding.channel_id and known.team_id == binding.team_id:
                del self._bindings[thread_id]
                self._latest.pop(thread_id, None)  # not followed while it is not bound
        self._bindings[binding.thread_id] = binding
        self._latest.pop(binding.thread_id, None)
        self._wake.set()

    def heard(self, thread_id: ThreadId, ts: str) -> None:
        self._heard[thread_id] = ts

    def said(self, message_id: EventId, thread_ts: str) -> None:
        """The person's message `message_id` was committed from Slack, in this Slack thread."""
        self._said[message_id] = thread_ts
        if len(self._said) > SAID_KEPT:  # told of messages the worker never came to
            del self._said[next(iter(self._said))]

    def on_commit(self, events: Sequence[AnyEvent], _task_events: Sequence[TaskEvent]) -> None:
        # With replicas a DM may have been bound through another one: any event may be news.
        news = self._leasing.shared and self._held is not None and bool(events)
        # An erasure is news for a thread whose DM was bound to another one since, too.
        if news or any(
            event.thread_id in self._bindings or isinstance(event, Erased) for event in events
        ):
            self._wake.set()

    def _streamed(self, thread_id: ThreadId) -> SlackBinding | None:
        """The DM a reply may be streamed to: only the holder of the delivery streams (the
        stream becomes the message when the delivery claims it)."""
        held = self._held is not None or not self._leasing.shared
        return self._bindings.get(thread_id) if held else None

    def on_activity(self, thread_id: ThreadId, role: str, working: bool) -> None:
        """Show "working…" in the DM while the role's turn runs (Slack's assistant status) —
        only once a turn has taken `STATUS_AFTER` seconds: a quick answer needs no status, and
        two Web API calls a turn would cost more than the turn."""
        binding = self._bindings.get(thread_id)
        ts = self._heard.get(thread_id)
        if role != self.role.name or binding is None or ts is None:
            return
        pending = self._showing.pop(thread_id, None)
        if working:
            self._showing[thread_id] = asyncio.get_running_loop().call_later(
                STATUS_AFTER, self._show, thread_id, binding, ts
            )
        elif pending is not None:
            pending.cancel()  # the turn ended before its status was shown: nothing to clear
        elif thread_id in self._shown:
            self._shown.discard(thread_id)
            self._background(self._status(binding, ts, ""))

    def _show(self, thread_id: ThreadId, binding: SlackBinding, ts: str) -> None:
        self._showing.pop(thread_id, None)
        self._shown.add(thread_id)
        self._background(self._status(binding, ts, f"{self.role.display_name} is working…"))

    def _background(self, call: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(call)
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _status(self, binding: SlackBinding, thread_ts: str, status: str) -> None:
        try:
            client = await self._clients.for_team(binding.team_id)
            await client.assistant_threads_setStatus(
                channel_id=binding.channel_id, thread_ts=thread_ts, status=status
            )
        except (SlackApiError, aiohttp.ClientError, TimeoutError, NotInstalled) as error:
            log.debug("slack status not shown: %s", error)

    # --- the loop -----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                if not await self._hold():  # another replica delivers: ask again later
                    await asyncio.sleep(self._leasing.retry_every)
                    self._wake.set()
                    continue
                await self._drain()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the cursor has not moved: the next wake tries again
                if (lost := _lost(error)) is not None:  # another replica delivers now
                    log.info("slack delivery of role %s: %s", self.role.name, lost)
                    self._leasing.lost(LeaseKind.SLACK, self.role.name)
                    self._held = None
                    self._latest.clear()
                    self._wake.set()
                    continue
                if (unavailable := _unavailable(error)) is not None:  # expected: no traceback
                    log.warning("slack delivery of role %s waits: %s", self.role.name, unavailable)
                elif isinstance(error, StorageUnavailable):
                    log.warning("slack delivery of role %s waits: %s", self.role.name, error)
                else:
                    log.exception("slack delivery of role %s stopped short", self.role.name)
                self._latest.clear()  # the page is gone through again: followed anew
                await asyncio.sleep(RETRY_PAUSE)
                self._wake.set()

    async def _hold(self) -> bool:
        """Whether this replica delivers the role's messages now; newly (re)claimed, the cursor
        and the bindings are read again first."""
        held = await self._leasing.hold(LeaseKind.SLACK, self.role.name)
        if held is None:
            self._held = None
            return False
        if held != self._held and self._leasing.shared:
            cursor = await self._db.slack.cursor(self.role.name)
            bindings = await self._db.slack.bindings(self.role.name)
            self._bindings.clear()
            self._bindings.update((binding.thread_id, binding) for binding in bindings)
            self._latest.clear()
            self.cursor = cursor if cursor is not None else self.cursor
        self._held = held
        return True

    async def _look_up(self, events: Sequence[AnyEvent]) -> None:
        """With replicas: the DMs of threads this worker does not know (bound elsewhere)."""
        unknown = {event.thread_id for event in events if event.thread_id not in self._bindings}
        if self._leasing.shared and unknown:
            for binding in await self._db.slack.bindings_of(self.role.name, sorted(unknown)):
                self.bound(binding)

    @property
    def _fence(self) -> Fence | None:
        return self._held.fence if self._held is not None else None

    async def _drain(self) -> None:
        """Deliver page after page: the DMs of a page at once (each DM's events in order), then
        the cursor past the page. A post is remembered with its Slack ts as soon as Slack took
        it, so a page done again after a failure or a restart skips what was posted."""
        while True:
            page = await self._db.threads.events_since(self.cursor, limit=PAGE)
            if not page.events:
                return
            await self._look_up(page.events)
            by_dm: _ByDm = {}
            for event in page.events:
                if isinstance(event, Erased):  # what came before first: then it all goes
                    await self._deliver_dms(by_dm)
                    by_dm = {}
                    await self._erase(event)
                    continue
                binding = self._bindings.get(event.thread_id)
                if binding is not None and event.position > binding.since:
                    answers = self._follow(event)
                    by_dm.setdefault(binding.channel_id, []).append((binding, event, answers))
            await self._deliver_dms(by_dm)
            position = page.events[-1].position
            await self._db.slack.advance(self.role.name, position, fence=self._fence)
            self.cursor = position

    def _follow(self, event: AnyEvent) -> _Latest | None:
        """Go past `event` of a bound conversation, in stream order: for the role's message,
        what it answers (the latest other message before it; None when the worker has not
        followed the conversation since then); another's message becomes the latest."""
        if not isinstance(event, Message):
            return None
        latest = self._latest.get(event.thread_id)
        if event.author == self.role.address:
            return latest if latest is not None and latest.position < event.position else None
        if latest is None or latest.position < event.position:  # not back on a page done again
            self._latest[event.thread_id] = _Latest(
                event.position, event.id, event.channel, self._said.pop(event.id, None)
            )
        return None

    async def _deliver_dms(self, by_dm: _ByDm) -> None:
        """The DMs' events at once (each DM's in order); a DM that fails stops the others: the
        page is done again, as a whole."""
        if by_dm:
            async with asyncio.TaskGroup() as group:
                for items in by_dm.values():
                    group.create_task(self._deliver_all(items))

    async def _deliver_all(
        self, items: list[tuple[SlackBinding, AnyEvent, _Latest | None]]
    ) -> None:
        async with self._at_once:
            for binding, event, answers in items:
                await self._deliver(binding, event, answers)

    async def _deliver(
        self, binding: SlackBinding, event: AnyEvent, answers: _Latest | None = None
    ) -> None:
        if isinstance(event, Retraction):
            await self._retract(binding, event)
            return
        if isinstance(event, ApprovalResolved):
            await self._show_outcome(binding, event)
            return
        post = await self._post_for(event, answers)
        if post is None or await self._db.slack.post_of(self.role.name, event.id) is not None:
            return  # nothing to post, or posted already (before a failure or a restart)
        where = {"rolecall.role": self.role.name, "rolecall.slack.channel": binding.channel_id}
        with tracing.delivery("rolecall.slack.post", event.id, attributes=where):
            await self._post(binding, event, post)

    async def _post(self, binding: SlackBinding, event: AnyEvent, post: _Post) -> None:
        """Post `event` once, recording the intent first and the ts Slack answers."""
        # The intent first: whatever happens from here on, a later attempt knows to look.
        first = await self._db.slack.intend(
            self.role.name, event.id, binding.channel_id, fence=self._fence
        )
        ts = None
        if isinstance(event, Message) and event.in_reply_to is not None:
            ts = await self.streams.claim(event.thread_id, event.text, self._metadata(event))
        if ts is None:
            ts = await self._send(binding, event, post, look_first=not first)
        if ts is not None:
            await self._db.slack.posted(
                PostedToSlack(self.role.name, event.id, binding.channel_id, ts, post.thread_ts)
            )
            self._noted.pop(binding.team_id, None)
        else:
            await self._db.slack.give_up(self.role.name, event.id)

    # --- what each event becomes --------------------------------------------------------------

    async def _post_for(self, event: AnyEvent, answers: _Latest | None = None) -> _Post | None:
        if isinstance(event, SystemNote):
            return _Post(f"_{event.text}_", None)
        if isinstance(event, ApprovalRequested):
            approvers = [await self.name_of(a) for a in event.approvers]
            asked = request_message(event, approvers=approvers)
            return _Post(asked.text, None, asked.blocks)
        if not isinstance(event, Message) or event.retracted or event.erased:
            return None  # a tombstone's intent goes with its thread's posts (`_erase`)
        if event.author == self.role.address:  # written in Markdown, posted in Slack's marks
            return _Post(to_mrkdwn(event.text), await self._answered(event, answers))
        if kind_of(event.author) is ParticipantKind.PERSON and event.channel == CHANNEL:
            return None  # said in Slack: it is there already
        name = await self.name_of(event.author)
        where = f" via {event.channel}" if event.channel else ""
        quoted = "\n".join(f"> {line}" for line in event.text.splitlines() or [""])
        return _Post(f"*{name}*{where}:\n{quoted}", None)

    async def _answered(self, reply: Message, answers: _Latest | None = None) -> str | None:
        """The Slack thread of the person's message the reply answers (`in_reply_to`), when it
        was written in Slack; None — the top level — for a message on the role's initiative or
        one that answers what was said elsewhere. `answers`: the latest message before the
        reply, when the worker followed the conversation (its thread is known without a read)."""
        if reply.in_reply_to is None:
            return None
        if answers is not None and answers.message_id == reply.in_reply_to:
            if answers.channel != CHANNEL:
                return None
            thread_ts = answers.thread_ts or self._said.pop(answers.message_id, None)
            if thread_ts is not None:
                return thread_ts
        post = await self._db.slack.post_of(self.role.name, reply.in_reply_to)
        return (post.thread_ts or post.ts) if post is not None else None

    async def name_of(self, author: Address) -> str:
        """A participant's display name (a person's as it was when first asked)."""
        if (known := self._names.get(author)) is not None:
            return known
        name = author.partition(":")[2]
        if kind_of(author) is ParticipantKind.PERSON:
            with contextlib.suppress(NotFound):  # an address no person record stands behind
                name = (await self._db.people.get(name)).display_name
        self._names[author] = name
        return name

    async def _retract(self, binding: SlackBinding, retraction: Retraction) -> None:
        post = await self._db.slack.post_of(self.role.name, retraction.target)
        if post is None or not post.outbound:
            return  # not ours to delete: a person's own message, or one never posted
        gone = ErasedPost(retraction.target, binding.team_id, post.channel_id, post.ts)
        await self._delete(gone, notice=RETRACTED_NOTICE)

    # --- erasure ------------------------------------------------------------------------------

    async def _erase(self, erased: Erased) -> None:
        """A person of the thread was erased: delete our posts of it in Slack, then forget them
        (and, for their conversation, the DM's binding). Done again, it finds what is left."""
        self._names.pop(erased.participant, None)
        erasure = await self._db.slack.erasure_of(self.role.name, erased.thread_id)
        if erasure.nothing:
            return
        where = {"rolecall.role": self.role.name, "rolecall.thread_id": erased.thread_id}
        with tracing.delivery("rolecall.slack.erase", erased.id, attributes=where):
            for post in erasure.posts:
                await self._delete(post, notice=ERASED_NOTICE)
            await self._db.slack.forget_thread(self.role.name, erasure, fence=self._fence)
        if erasure.whole:
            self._unbind(erasure)

    def _unbind(self, erasure: SlackErasure) -> None:
        """Nothing more of the erased conversation goes to its DM."""
        thread_id = erasure.thread_id
        self._bindings.pop(thread_id, None)
        self._latest.pop(thread_id, None)
        self._heard.pop(thread_id, None)
        self._shown.discard(thread_id)
        if (pending := self._showing.pop(thread_id, None)) is not None:
            pending.cancel()

    async def _delete(self, post: ErasedPost, *, notice: str) -> None:
        """Delete our post in Slack (one whose ts was not recorded is looked for first): done
        when it is gone, was gone already (`message_not_found`), or Slack will never delete it —
        its text is then replaced with `notice`, if Slack takes that (logged). `SlackUnavailable`
        after `POST_ATTEMPTS` attempts."""
        ts = post.ts
        for attempt in range(POST_ATTEMPTS):
            if attempt:
                await asyncio.sleep(RETRY_PAUSE * 2 ** (attempt - 1))
            try:
                client = await self._clients.for_team(post.team_id)
            except NotInstalled as error:
                log.warning("slack message %s not deleted: %s", post.message_id, error)
                return
            if ts is None:
                try:
                    ts = await self._find(client, post.channel_id, post.message_id, post.thread_ts)
                except _Unread as error:
                    log.info(
                        "slack history not read (%s): %s not deleted yet", error, post.message_id
                    )
                    continue
                if ts is None:
                    return  # it never reached Slack
            await self._paced(post.channel_id)
            try:
                await client.chat_delete(channel=post.channel_id, ts=ts)
                return
            except SlackApiError as error:
                code = _code(error)
                if code == "message_not_found":
                    return  # deleted already: a page done again
                await self._note(post.team_id, error, "chat.delete")
                if code in NOT_DELETED:
                    log.info("slack refused to delete %s (%s): replacing its text", ts, code)
                    with contextlib.suppress(SlackApiError, TimeoutError, aiohttp.ClientError):
                        await client.chat_update(channel=post.channel_id, ts=ts, text=notice)
                    return
                self._clients.refused(post.team_id, client, code)
                log.info("slack delete failed (%s), attempt %d", code, attempt + 1)
            except (TimeoutError, aiohttp.ClientError) as error:
                name = type(error).__name__
                log.info("slack delete unanswered (%s), attempt %d", name, attempt + 1)
        raise SlackUnavailable(
            f"message {post.message_id} not deleted in slack in {POST_ATTEMPTS} attempts"
        )

    async def _show_outcome(self, binding: SlackBinding, resolved: ApprovalResolved) -> None:
        """Update the post of the approval's request to show how it was resolved: done when
        Slack takes it or will never take it (logged); `SlackUnavailable` after `POST_ATTEMPTS`
        attempts. Making it again is harmless: it is the same update."""
        post = await self._db.slack.post_of(self.role.name, resolved.target)
        if post is None:
            return  # never posted: asked before the DM was this conversation's, or refused
        asked, _ = await self._db.approvals.get(resolved.target)
        by_name = await self.name_of(resolved.by) if resolved.by is not None else None
        shown = resolved_message(asked, resolved.resolution, by_name=by_name)
        for attempt in range(POST_ATTEMPTS):
            if attempt:
                await asyncio.sleep(RETRY_PAUSE * 2 ** (attempt - 1))
            try:
                client = await self._clients.for_team(binding.team_id)
            except NotInstalled as error:
                log.warning("slack approval %s not updated: %s", resolved.target, error)
                return
            try:
                await client.chat_update(
                    channel=post.channel_id, ts=post.ts, text=shown.text, blocks=shown.blocks
                )
                return
            except SlackApiError as error:
                code = _code(error)
                await self._note(binding.team_id, error, "chat.update")
                if code in NOT_UPDATED:
                    log.warning("slack approval %s not updated: %s", resolved.target, code)
                    return
                self._clients.refused(binding.team_id, client, code)
                log.info("slack update failed (%s), attempt %d", code, attempt + 1)
            except (TimeoutError, aiohttp.ClientError) as error:
                name = type(error).__name__
                log.info("slack update unanswered (%s), attempt %d", name, attempt + 1)
        raise SlackUnavailable(
            f"approval {resolved.target} not updated in slack in {POST_ATTEMPTS} attempts"
        )

    async def _note(self, team_id: str, error: SlackApiError, method: str) -> None:
        """Slack refused a call in the workspace: written as its latest refusal (`slack_errors`,
        what the operator API's workspace health shows) — the same one again only after
        `NOTE_EVERY` seconds."""
        code = _code(error) or f"http_{error.response.status_code}"
        now = time.monotonic()
        noted = self._noted.get(team_id)
        if noted is not None and noted[0] == code and now - noted[1] < NOTE_EVERY:
            return
        self._noted[team_id] = (code, now)
        await self._db.slack.refused(self.role.name, team_id, code, method)

    def _metadata(self, event: AnyEvent) -> dict[str, Any]:
        """The marker Slack keeps with our post of `event`: how `_find` knows it."""
        return {"event_type": METADATA_TYPE, "event_payload": {"id": event.id}}

    async def _send(
        self, binding: SlackBinding, event: AnyEvent, post: _Post, *, look_first: bool
    ) -> str | None:
        """Post it once; its ts, or None when Slack will never take it (logged). With
        `look_first` (an earlier attempt may have reached Slack), and after any failure that
        says Slack may have taken it, the DM's history is read first; nothing is posted while
        it cannot be read. `SlackUnavailable` after `POST_ATTEMPTS` attempts."""
        channel = binding.channel_id
        for attempt in range(POST_ATTEMPTS):
            if attempt:
                await asyncio.sleep(RETRY_PAUSE * 2 ** (attempt - 1))
            try:
                client = await self._clients.for_team(binding.team_id)
            except NotInstalled as error:
                log.warning("slack will not take message %s: %s", event.id, error)
                return None
            if look_first:
                try:
                    found = await self._find(client, channel, event.id, post.thread_ts)
                except _Unread as error:
                    log.info("slack history not read (%s): not posting %s yet", error, event.id)
                    continue
                if found is not None:
                    log.info("slack has message %s already (%s): not posted again", event.id, found)
                    return found
                look_first = False
            await self._paced(channel)
            try:
                answer = await client.chat_postMessage(
                    channel=channel,
                    text=clean_text(post.text),
                    blocks=post.blocks,
                    thread_ts=post.thread_ts,
                    metadata=self._metadata(event),
                    unfurl_links=False,
                )
                return str(answer["ts"])
            except SlackApiError as error:
                code = _code(error)
                await self._note(binding.team_id, error, "chat.postMessage")
                if code in PERMANENT:
                    log.warning("slack will not take message %s: %s", event.id, code)
                    return None
                self._clients.refused(binding.team_id, client, code)
                look_first = _maybe_taken(error)
                status = error.response.status_code
                log.info("slack post failed (%s, HTTP %s), attempt %d", code, status, attempt + 1)
            except (TimeoutError, aiohttp.ClientError) as error:
                log.info("slack post unanswered (%s): looking for it", type(error).__name__)
                look_first = True
        raise SlackUnavailable(
            f"message {event.id} not posted to slack in {POST_ATTEMPTS} attempts"
        )

    async def _find(
        self, client: AsyncWebClient, channel: str, event_id: EventId, thread_ts: str | None
    ) -> str | None:
        """The ts of our post of the event `event_id`, if Slack has it (a reply in a thread is found
        among the thread's replies, not in the channel's history), looked for in the newest
        `FIND_PAGES` pages; `_Unread` when Slack did not answer."""
        cursor: str | None = None
        for _ in range(FIND_PAGES):
            try:
                if thread_ts is not None:
                    answer = await client.conversations_replies(
                        channel=channel,
                        ts=thread_ts,
                        limit=FIND_PAGE,
                        include_all_metadata=True,
                        cursor=cursor,
                    )
                else:
                    answer = await client.conversations_history(
                        channel=channel, limit=FIND_PAGE, include_all_metadata=True, cursor=cursor
                    )
            except SlackApiError as error:
                if _code(error) == "thread_not_found":  # the thread's first message is gone
                    return None
                raise _Unread(_code(error) or f"HTTP {error.response.status_code}") from None
            except (TimeoutError, aiohttp.ClientError) as error:
                raise _Unread(type(error).__name__) from None
            for message in answer.get("messages") or []:
                metadata = message.get("metadata") or {}
                if (
                    metadata.get("event_type") == METADATA_TYPE
                    and (metadata.get("event_payload") or {}).get("id") == event_id
                ):
                    return str(message["ts"])
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if not answer.get("has_more") or cursor is None:
                return None
        return None

    async def _paced(self, channel: str) -> None:
        last = self._last_post.get(channel)
        if last is not None:
            wait = self._pace - (time.monotonic() - last)
            if wait > 0:
                await asyncio.sleep(wait)
        self._last_post[channel] = time.monotonic()
