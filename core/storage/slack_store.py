"""What the Slack channel keeps: deliveries seen, DMs bound to threads, Slack messages mapped to
timeline messages, and how far each role's delivery has posted.

A person's message from Slack is committed in one transaction with the record of its delivery
(`event_id`): a retry of the same delivery — to this replica or another, now or after a restart
— finds the record and changes nothing. The map from timeline message to Slack `ts` is written
with the message (inbound) or right after Slack accepted the post (outbound), and the role's
delivery cursor moves only after that, so a restart loses nothing Slack has not.

The outbox makes a post exactly once across a crash: the intent to post an event
(`IntendToPost`) is committed before the post, and deleted in the transaction that records the
post's `ts` (`PostedToSlack`) or that gives it up (`GiveUpPost`). An intent found already there
says an earlier attempt — of this worker before a restart, or of another replica's — may have
reached Slack without its ts being recorded: the delivery looks for the post in the DM's history
(by the event id in its metadata) before it posts again.

With several replicas, a role's delivery is made by the holder of its lease (`LeaseKind.SLACK`,
the role's name): the intent to post and the cursor's move name the holder's fence, so a
replica that lost the lease can neither post (its intent is refused before the post) nor move
the cursor (`LeaseLost`).

Erasure (`core.model.erasure`): when a person is erased, the delivery deletes in Slack the posts
it made for the thread (`erasure_of`: in their conversation every post; in a group thread those
of their messages, now tombstones), then `ForgetSlackThread` removes what is kept here of them —
the map rows, the intents, and, for a conversation, the DM's binding — so nothing more of the old
thread reaches the DM. A Slack message a person wrote is forgotten here but stays in Slack (only a
user token may delete it). An erased person writes nothing more: a delivery naming them as its
author is refused (`person_erased`), and the inbound handler looks the Slack user up again — a
new person, in a new conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, func, select

from core.model.errors import RolecallError
from core.model.leases import Fence, LeaseKind
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.timeline import AnyEvent, EventId, MessageContext, ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.engine import dialect_of
from core.storage.leases_store import check_fence
from core.storage.positions import handed_out_expression
from core.storage.slack_reads import WorkspacePage, workspaces
from core.storage.threads_commands import PostMessage, Retract
from core.storage.transact import Transactor
from core.storage.writer import Writer

CHANNEL = "slack"
REPLACES = "replaces"
"""The context kind of a message that replaces an edited one (`originating_message`)."""

_ev, _cv, _m, _cur, _out = (
    schema.slack_events,
    schema.slack_conversations,
    schema.slack_messages,
    schema.slack_cursors,
    schema.slack_outbox,
)
_e, _tp, _p = schema.events, schema.thread_participants, schema.persons
_err = schema.slack_errors
_CHUNK = 500
"""Ids in one `IN (…)`."""


@dataclass(frozen=True, slots=True)
class _Upserts:
    """The statements of every Slack delivery, built once per dialect: values are bound at
    execution, so SQLAlchemy finds each compiled in its cache without building it again."""

    delivery: Any
    bind: Any
    post: Any
    advance: Any
    intend: Any

    @classmethod
    def of(cls, dialect: Any, name: str) -> _Upserts:
        # A DM bound to a thread (anew, or to another one) starts at the stream's head now: the
        # highest position handed out, since the batch holds the thread's lock no other batch
        # can be committing events of this thread below it.
        head = handed_out_expression(name, schema.EVENTS_STREAM)
        bind = dialect.insert(_cv).values(since_position=head)
        advance = dialect.insert(_cur)
        return cls(
            delivery=dialect.insert(_ev).on_conflict_do_nothing(index_elements=["event_id"]),
            bind=bind.on_conflict_do_update(
                index_elements=["role", "team_id", "channel_id"],
                set_={
                    "thread_id": bind.excluded.thread_id,
                    "since_position": bind.excluded.since_position,
                },
                where=_cv.c.thread_id != bind.excluded.thread_id,
            ),
            post=dialect.insert(_m).on_conflict_do_nothing(
                index_elements=["role", "channel_id", "ts"]
            ),
            advance=advance.on_conflict_do_update(
                index_elements=["role"],
                set_={"position": advance.excluded.position},
                where=_cur.c.position < advance.excluded.position,
            ),
            intend=dialect.insert(_out).on_conflict_do_nothing(
                index_elements=["role", "message_id"]
            ),
        )


_UPSERTS: dict[str, _Upserts] = {}


def _upserts(connection: Connection) -> _Upserts:
    name = connection.dialect.name
    found = _UPSERTS.get(name)
    if found is None:
        found = _UPSERTS[name] = _Upserts.of(dialect_of(connection), name)
    return found


def _first_delivery(batch: Batch, delivery: SlackDelivery) -> bool:
    """Record the delivery (with its workspace); False when it was recorded before (a retry, or
    a replay)."""
    inserted = batch.connection.execute(
        _upserts(batch.connection).delivery,
        {
            "event_id": delivery.event_id,
            "role": delivery.role,
            "received_at": batch.now,
            "team_id": delivery.team_id,
        },
    )
    return inserted.rowcount == 1


def _bind(batch: Batch, role: str, team_id: str, channel_id: str, thread_id: ThreadId) -> None:
    """The DM is this thread from now on (a link may have made it another person's)."""
    batch.connection.execute(
        _upserts(batch.connection).bind,
        {
            "role": role,
            "team_id": team_id,
            "channel_id": channel_id,
            "thread_id": thread_id,
            "created_at": batch.now,
        },
    )


def _refused_unless_repeat(
    batch: BatchView, delivery: SlackDelivery, check: Callable[[BatchView], None]
) -> bool:
    """Run the check of a delivery's timeline command: True when it holds; False when a rule
    refuses it but the delivery was handled before (a repeat changes nothing, whatever the rules
    say now); else the refusal is raised — before anything is recorded, so a later delivery of
    the same event, after the cause is fixed, is not taken for a repeat. The record is looked
    for only when a rule refuses: the common way costs no read."""
    try:
        check(batch)
    except RolecallError:
        seen = select(_ev.c.event_id).where(_ev.c.event_id == delivery.event_id)
        if batch.connection.execute(seen).first() is not None:
            return False
        raise
    return True


def _message_at(connection: Reads, role: str, channel_id: str, ts: str) -> EventId | None:
    found = connection.execute(
        select(_m.c.message_id).where(
            _m.c.role == role, _m.c.channel_id == channel_id, _m.c.ts == ts
        )
    ).scalar()
    return EventId(found) if found is not None else None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Heard:
    """What the check of an inbound delivery found: a repeat that a rule would refuse now
    (nothing to do), or the timeline command it carries out once recorded (none: nothing but
    the record)."""

    repeat: bool = False
    post: PostMessage | None = None
    edited: EventId | None = None
    retract: Retract | None = None


@dataclass(frozen=True, slots=True)
class SlackDelivery:
    """Where a Slack event came from."""

    event_id: str
    role: str
    team_id: str
    channel_id: str


@dataclass(frozen=True, slots=True)
class SayFromSlack(NoRuns):
    """A person's message in a DM, or an edit of one (`replaces`: the edited message's ts, which
    is also `ts`; the new message says it replaces the old one, and the Slack message stands for
    the new one from then on). None when the delivery was handled before."""

    thread_id: ThreadId
    delivery: SlackDelivery
    author: Address
    text: str
    ts: str
    thread_ts: str | None = None
    replaces: str | None = None

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> _Heard:
        d = self.delivery
        context = None
        edited = (
            _message_at(batch.connection, d.role, d.channel_id, self.replaces)
            if self.replaces
            else None
        )
        if edited is not None:
            context = MessageContext(kind=REPLACES, originating_message=edited)
        post = PostMessage(self.thread_id, self.author, self.text, context, CHANNEL)
        if not _refused_unless_repeat(batch, d, post.check):
            return _Heard(repeat=True)
        return _Heard(post=post, edited=edited)

    def write(self, batch: Batch, plan: _Heard) -> Callable[[], AnyEvent | None]:
        d = self.delivery
        if plan.repeat or not _first_delivery(batch, d):
            return lambda: None
        assert plan.post is not None
        finish = plan.post.write(batch, None)
        edited = plan.edited
        index = len(batch.staged) - 1
        _bind(batch, d.role, d.team_id, d.channel_id, self.thread_id)
        if edited is not None:  # the Slack message now stands for its latest version
            batch.connection.execute(
                delete(_m).where(
                    _m.c.role == d.role, _m.c.channel_id == d.channel_id, _m.c.ts == self.ts
                )
            )
        batch.insert_after_flush(
            _m,
            ("role", "channel_id", "ts", "message_id", "thread_ts", "outbound", "created_at"),
            lambda: (
                d.role,
                d.channel_id,
                self.ts,
                batch.committed[index].id,
                self.thread_ts,
                False,
                batch.now,
            ),
        )
        return finish


@dataclass(frozen=True, slots=True)
class RetractFromSlack(NoRuns):
    """A person deleted their Slack message: the timeline message it stands for is retracted
    by them. None when the delivery was handled before or the message is not one we know."""

    thread_id: ThreadId
    delivery: SlackDelivery
    author: Address
    ts: str

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> _Heard:
        d = self.delivery
        message_id = _message_at(batch.connection, d.role, d.channel_id, self.ts)
        if message_id is None:
            return _Heard()  # not a message we know: only the delivery is recorded
        retract = Retract(self.thread_id, message_id, self.author, "deleted in Slack")
        if not _refused_unless_repeat(batch, d, retract.check):
            return _Heard(repeat=True)
        return _Heard(retract=retract)

    def write(self, batch: Batch, plan: _Heard) -> Callable[[], AnyEvent | None]:
        d = self.delivery
        if plan.repeat or not _first_delivery(batch, d):
            return lambda: None
        if plan.retract is None:
            return lambda: None
        return plan.retract.write(batch, None)


@dataclass(frozen=True, slots=True)
class SeenInSlack(NoRuns):
    """A delivery handled without a message (a bot's echo, an event we do not act on): record
    it so a retry is recognised. False when it was recorded before."""

    delivery: SlackDelivery
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        first = _first_delivery(batch, self.delivery)
        return lambda: first


@dataclass(frozen=True, slots=True)
class PostedToSlack(NoRuns):
    """Slack accepted the post of a timeline message: remember its `ts` (and, with `position`,
    move the role's delivery cursor past it in the same transaction)."""

    role: str
    message_id: EventId
    channel_id: str
    ts: str
    thread_ts: str | None
    position: int | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.execute(
            _upserts(batch.connection).post,
            {
                "role": self.role,
                "channel_id": self.channel_id,
                "ts": self.ts,
                "message_id": self.message_id,
                "thread_ts": self.thread_ts,
                "outbound": True,
                "created_at": batch.now,
            },
        )
        _fulfil(batch, self.role, self.message_id)
        if self.position is not None:
            _advance(batch, self.role, self.position)
        return lambda: None


@dataclass(frozen=True, slots=True)
class IntendToPost(NoRuns):
    """The delivery is about to post a timeline event to a DM: committed before the post.
    True when the intent is new; False when it was there already (an earlier attempt, which
    may have reached Slack). `fence`: the delivery's claim on the role's lease (`LeaseLost`
    when it is not the lease's any more: nothing may be posted; None: the only process)."""

    role: str
    message_id: EventId
    channel_id: str
    fence: Fence | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        if self.fence is not None:
            check_fence(batch, LeaseKind.SLACK, self.role, self.fence)

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        inserted = batch.connection.execute(
            _upserts(batch.connection).intend,
            {
                "role": self.role,
                "message_id": self.message_id,
                "channel_id": self.channel_id,
                "created_at": batch.now,
            },
        )
        first = inserted.rowcount == 1
        return lambda: first


@dataclass(frozen=True, slots=True)
class GiveUpPost(NoRuns):
    """Slack will never take the post (a permanent refusal, a workspace the app left): the
    intent is dropped, the event is not posted."""

    role: str
    message_id: EventId
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        _fulfil(batch, self.role, self.message_id)
        return lambda: None


@dataclass(frozen=True, slots=True)
class SlackRefused(NoRuns):
    """Slack refused a call of the role's app in a workspace (`code`, as Slack answered it, such
    as `token_revoked`; `method`, the Web API method): it is the workspace's latest refusal."""

    role: str
    team_id: str
    code: str
    method: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        insert = dialect_of(batch.connection).insert(_err)
        values = {"code": self.code, "method": self.method, "at": batch.now}
        batch.connection.execute(
            insert.values(role=self.role, team_id=self.team_id, **values).on_conflict_do_update(
                index_elements=["role", "team_id"], set_=values
            )
        )
        return lambda: None


def _fulfil(batch: Batch, role: str, message_id: str) -> None:
    batch.connection.execute(
        delete(_out).where(_out.c.role == role, _out.c.message_id == message_id)
    )


@dataclass(frozen=True, slots=True)
class BindSlackConversation(NoRuns):
    role: str
    team_id: str
    channel_id: str
    thread_id: ThreadId
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], SlackBinding]:
        _bind(batch, self.role, self.team_id, self.channel_id, self.thread_id)
        since = batch.connection.execute(
            select(_cv.c.since_position).where(
                _cv.c.role == self.role,
                _cv.c.team_id == self.team_id,
                _cv.c.channel_id == self.channel_id,
            )
        ).scalar_one()
        binding = SlackBinding(self.team_id, self.channel_id, self.thread_id, since)
        return lambda: binding


@dataclass(frozen=True, slots=True)
class ForgetSlackThread(NoRuns):
    """The posts of an erased thread were deleted in Slack (`SlackErasure`): forget the map
    rows and intents of its messages `message_ids` and, for a conversation (`whole`), every row
    of the thread's events and the DM's binding to it (a DM bound to another thread since keeps
    that binding). `fence` as for `IntendToPost`."""

    role: str
    thread_id: ThreadId
    message_ids: tuple[EventId, ...]
    whole: bool
    fence: Fence | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        if self.fence is not None:
            check_fence(batch, LeaseKind.SLACK, self.role, self.fence)

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        connection, role = batch.connection, self.role
        if self.whole:
            of_thread = select(_e.c.id).where(_e.c.thread_id == self.thread_id)
            connection.execute(delete(_m).where(_m.c.role == role, _m.c.message_id.in_(of_thread)))
            connection.execute(
                delete(_out).where(_out.c.role == role, _out.c.message_id.in_(of_thread))
            )
            connection.execute(
                delete(_cv).where(_cv.c.role == role, _cv.c.thread_id == self.thread_id)
            )
        for start in range(0, len(self.message_ids), _CHUNK):
            chunk = self.message_ids[start : start + _CHUNK]
            connection.execute(delete(_m).where(_m.c.role == role, _m.c.message_id.in_(chunk)))
            connection.execute(
                delete(_out).where(_out.c.role == role, _out.c.message_id.in_(chunk))
            )
        return lambda: None


@dataclass(frozen=True, slots=True)
class AdvanceSlackCursor(NoRuns):
    """The role's delivery went past `position`; `fence` as for `IntendToPost`."""

    role: str
    position: int
    fence: Fence | None = None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        if self.fence is not None:
            check_fence(batch, LeaseKind.SLACK, self.role, self.fence)

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        _advance(batch, self.role, self.position)
        return lambda: None


def _advance(batch: Batch, role: str, position: int) -> None:
    batch.connection.execute(
        _upserts(batch.connection).advance, {"role": role, "position": position}
    )


# --- reads --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SlackBinding:
    team_id: str
    channel_id: str
    thread_id: ThreadId
    since: int = field(default=0, compare=False)
    """The event position when the DM became this thread: events at or before it were said
    before the DM was the conversation's, and are not posted to it."""


@dataclass(frozen=True, slots=True)
class SlackPost:
    channel_id: str
    ts: str
    thread_ts: str | None
    outbound: bool


@dataclass(frozen=True, slots=True)
class ErasedPost:
    """A post of ours of an erased thread's event, to delete in Slack; `ts` None for one that
    may have reached Slack without its ts being recorded (an intent): it is looked for first,
    in the DM's history — or, with `thread_ts`, among that Slack thread's replies."""

    message_id: EventId
    team_id: str
    channel_id: str
    ts: str | None
    thread_ts: str | None = None


@dataclass(frozen=True, slots=True)
class SlackErasure:
    """What the Slack channel has to undo for a thread a person was erased from: in their
    conversation (`whole`: every person of the thread is erased) every post, then the binding;
    in a group thread the posts of their messages, now tombstones."""

    thread_id: ThreadId
    whole: bool
    posts: tuple[ErasedPost, ...]
    """Ours (outbound), to delete, and the intents."""
    message_ids: tuple[EventId, ...]
    """Every message whose rows go: ours and the people's own Slack messages."""
    bound: bool
    """A DM of the role is bound to the thread."""

    @property
    def nothing(self) -> bool:
        return not (self.posts or self.message_ids or (self.whole and self.bound))


def _team_of(role: Any, channel_id: Any) -> Any:
    """The workspace of a DM, from its binding (to whichever thread it is bound now)."""
    return (
        select(_cv.c.team_id)
        .where(_cv.c.role == role, _cv.c.channel_id == channel_id)
        .limit(1)
        .scalar_subquery()
    )


def erasure_of(connection: Reads, role: str, thread_id: ThreadId) -> SlackErasure:
    """What the role's delivery has to delete in Slack and forget for an erased thread."""
    people = [
        address
        for address in connection.execute(
            select(_tp.c.address).where(_tp.c.thread_id == thread_id)
        ).scalars()
        if kind_of(Address(address)) is ParticipantKind.PERSON
    ]
    slugs = [address.partition(":")[2] for address in people]
    erased = connection.execute(
        select(_p.c.slug).where(_p.c.slug.in_(slugs), _p.c.erased_at.is_not(None))
    ).scalars()
    whole = bool(people) and len(set(erased)) == len(set(slugs))
    rows = connection.execute(
        select(
            _m.c.message_id,
            _m.c.channel_id,
            _m.c.ts,
            _m.c.outbound,
            _e.c.detail,
            _team_of(_m.c.role, _m.c.channel_id).label("team_id"),
        )
        .join(_e, _e.c.id == _m.c.message_id)
        .where(_m.c.role == role, _e.c.thread_id == thread_id)
        .order_by(_e.c.position)
    ).all()
    chosen = [r for r in rows if whole or _tombstone(r.detail)]
    posts = [
        ErasedPost(EventId(r.message_id), r.team_id or "", r.channel_id, r.ts)
        for r in chosen
        if r.outbound
    ]
    replied = _m.alias("replied")
    intents = connection.execute(
        select(
            _out.c.message_id,
            _out.c.channel_id,
            _e.c.detail,
            _team_of(_out.c.role, _out.c.channel_id).label("team_id"),
            func.coalesce(replied.c.thread_ts, replied.c.ts).label("thread_ts"),
        )
        .join(_e, _e.c.id == _out.c.message_id)
        .outerjoin(
            replied, and_(replied.c.role == _out.c.role, replied.c.message_id == _e.c.in_reply_to)
        )
        .where(_out.c.role == role, _e.c.thread_id == thread_id)
        .order_by(_e.c.position)
    ).all()
    posts += [
        ErasedPost(EventId(r.message_id), r.team_id or "", r.channel_id, None, r.thread_ts)
        for r in intents
        if whole or _tombstone(r.detail)
    ]
    bound = connection.execute(
        select(_cv.c.channel_id).where(_cv.c.role == role, _cv.c.thread_id == thread_id).limit(1)
    ).first()
    return SlackErasure(
        thread_id=thread_id,
        whole=whole,
        posts=tuple(posts),
        message_ids=tuple(EventId(r.message_id) for r in chosen)
        + tuple(EventId(r.message_id) for r in intents if whole or _tombstone(r.detail)),
        bound=bound is not None,
    )


def _tombstone(detail: Any) -> bool:
    """A message erased with a person (`core.storage.rows.TOMBSTONE`)."""
    return isinstance(detail, dict) and detail.get("erased") is True


_POST_OF = select(_m.c.channel_id, _m.c.ts, _m.c.thread_ts, _m.c.outbound).where(
    _m.c.role == bindparam("role"), _m.c.message_id == bindparam("message_id")
)


class SqlSlackRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def say(self, command: SayFromSlack) -> AnyEvent | None:
        return await self._writer.run(command)

    async def retract(self, command: RetractFromSlack) -> AnyEvent | None:
        return await self._writer.run(command)

    async def seen(self, delivery: SlackDelivery) -> bool:
        return await self._writer.run(SeenInSlack(delivery))

    async def posted(self, command: PostedToSlack) -> None:
        await self._writer.run(command)

    async def intend(
        self, role: str, message_id: EventId, channel_id: str, *, fence: Fence | None = None
    ) -> bool:
        """Commit the intent to post; False when an earlier attempt left it (see the module);
        `LeaseLost` when `fence` is no longer the lease's."""
        return await self._writer.run(IntendToPost(role, message_id, channel_id, fence))

    async def give_up(self, role: str, message_id: EventId) -> None:
        await self._writer.run(GiveUpPost(role, message_id))

    async def refused(self, role: str, team_id: str, code: str, method: str) -> None:
        """Slack refused a call of the role's app in the workspace (`SlackRefused`)."""
        await self._writer.run(SlackRefused(role, team_id, code, method))

    async def workspaces(
        self, role: str, *, client_id: str | None, after: str | None, limit: int
    ) -> WorkspacePage:
        """The role's workspaces and their health, in team id order (`slack_reads`)."""
        return await self._reads.transact(
            lambda c: workspaces(c, role, client_id=client_id, after=after, limit=limit)
        )

    async def intents(self, role: str) -> list[EventId]:
        """The events the role's delivery meant to post and has not recorded or given up."""

        def read(c: Connection) -> list[EventId]:
            rows = c.execute(select(_out.c.message_id).where(_out.c.role == role))
            return [EventId(r.message_id) for r in rows]

        return await self._reads.transact(read)

    async def bind(self, role: str, binding: SlackBinding) -> SlackBinding:
        """The DM is this thread from now on; the binding as stored (with its `since`)."""
        return await self._writer.run(
            BindSlackConversation(role, binding.team_id, binding.channel_id, binding.thread_id)
        )

    async def advance(self, role: str, position: int, *, fence: Fence | None = None) -> None:
        """`LeaseLost` when `fence` is no longer the lease's."""
        await self._writer.run(AdvanceSlackCursor(role, position, fence))

    async def bindings(self, role: str) -> list[SlackBinding]:
        def read(c: Connection) -> list[SlackBinding]:
            rows = c.execute(
                select(
                    _cv.c.team_id, _cv.c.channel_id, _cv.c.thread_id, _cv.c.since_position
                ).where(_cv.c.role == role)
            )
            return [
                SlackBinding(r.team_id, r.channel_id, ThreadId(r.thread_id), r.since_position)
                for r in rows
            ]

        return await self._reads.transact(read)

    async def bindings_of(self, role: str, thread_ids: Sequence[ThreadId]) -> list[SlackBinding]:
        """The DMs bound to these threads (bound through any replica)."""

        def read(c: Connection) -> list[SlackBinding]:
            rows = c.execute(
                select(
                    _cv.c.team_id, _cv.c.channel_id, _cv.c.thread_id, _cv.c.since_position
                ).where(_cv.c.role == role, _cv.c.thread_id.in_(list(thread_ids)))
            )
            return [
                SlackBinding(r.team_id, r.channel_id, ThreadId(r.thread_id), r.since_position)
                for r in rows
            ]

        if not thread_ids:
            return []
        return await self._reads.transact(read)

    async def thread_of(self, role: str, team_id: str, channel_id: str) -> ThreadId | None:
        """The conversation a DM of the role's app is bound to, if any."""

        def read(c: Connection) -> ThreadId | None:
            found = c.execute(
                select(_cv.c.thread_id).where(
                    _cv.c.role == role, _cv.c.team_id == team_id, _cv.c.channel_id == channel_id
                )
            ).scalar()
            return ThreadId(found) if found is not None else None

        return await self._reads.transact(read)

    async def cursor(self, role: str) -> int | None:
        """How far the role's delivery has posted; None before it ever ran."""

        def read(c: Connection) -> int | None:
            found = c.execute(select(_cur.c.position).where(_cur.c.role == role)).scalar()
            return int(found) if found is not None else None

        return await self._reads.transact(read)

    async def post_of(self, role: str, message_id: str) -> SlackPost | None:
        """Where a timeline message is in Slack, if it is."""

        def read(c: Connection) -> SlackPost | None:
            row = c.execute(_POST_OF, {"role": role, "message_id": message_id}).first()
            return SlackPost(row.channel_id, row.ts, row.thread_ts, row.outbound) if row else None

        return await self._reads.transact(read)

    async def erasure_of(self, role: str, thread_id: ThreadId) -> SlackErasure:
        """What the role's delivery deletes in Slack and forgets for an erased thread."""
        return await self._reads.transact(lambda c: erasure_of(c, role, thread_id))

    async def forget_thread(
        self, role: str, erasure: SlackErasure, *, fence: Fence | None = None
    ) -> None:
        """The erased thread's posts are deleted in Slack: forget them (`ForgetSlackThread`);
        `LeaseLost` when `fence` is no longer the lease's."""
        await self._writer.run(
            ForgetSlackThread(role, erasure.thread_id, erasure.message_ids, erasure.whole, fence)
        )

    async def delivered(self, event_id: str) -> bool:
        def read(c: Connection) -> bool:
            found = c.execute(select(_ev.c.event_id).where(_ev.c.event_id == event_id)).first()
            return found is not None

        return await self._reads.transact(read)
