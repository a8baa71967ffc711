"""The tables. Migrations in `core/storage/migrations/` create exactly this schema.

- `threads`: one row per participant set (`set_key` is unique: that is what makes resolution
  race-free), with the per-thread `last_seq`/`last_at` that appends advance under the row's lock.
- `thread_participants`: permanent membership and each participant's current state.
- `events`: the timelines of all threads. `position` is the global order, assigned from the
  `stream_positions` counter inside the committing transaction; `(thread_id, seq)` is unique.
  Times are integer microseconds since the Unix epoch, UTC, exact on every backend.
  `detail` holds the fields of an approval event that have no column of their own.
- `pending_approvals`: the approvals not resolved yet (the request event's id, its thread and
  run, when it expires); a resolution deletes the row in the same transaction.
- `stream_positions`: on SQLite, one counter row per stream; updating it inside the committing
  transaction hands positions out in commit order. On PostgreSQL each stream has a sequence
  instead (`POSITION_SEQUENCES`) and every writer a row of `stream_writers`: the highest
  position of each stream its committed batches took, and the key of the advisory lock it holds
  while a batch is open — readers read only up to what every open batch cannot go below
  (`core.storage.positions`), so committers of many replicas never queue on one row.
- `runs`: the unit of agent work — one per role per thread (a conversation run) or per task. Its
  `cursor` is the `seq` in its thread up to which it has looked; `session_id` its current session.
- `run_sessions`: a run's sessions, numbered; `state` is what the runtime needs to resume one
  after idle sleep (NULL until its first turn: the next turn is then its opening turn).
- `turns`: the transcript, one row per finished turn: what the run was told, what the agent did,
  what it said, timings and errors.
- `memory_entries`: every role's agent memory, append-only; `text` is the payload's words (what
  full-text search indexes: an FTS5 table `memory_search` on SQLite, a generated `tsvector`
  column with a GIN index on PostgreSQL — both created by the migration, outside this metadata).
  `payload` is `jsonb` on PostgreSQL, so every payload stored there is one it can compare.
  `memory_redactions`: an operator's redaction of an entry (who, when, why); recall skips it.
- `tasks`, `task_events`: tracked work items and every change to them (who, what), the events
  in a stream of their own (`task_events` counter in `stream_positions`).
- `subscriptions`: which conversation runs watch which tasks; `since` is the task-event position
  at subscribing (older events are not news to it). `runs.task_cursor` is the task-event position
  up to which a run has looked.
- `run_tokens`: bearer tokens naming one run each, kept only as SHA-256 digests.
- `threads.archive_before`: messages with a lower `seq` were said before the latest "start fresh";
  person-facing reads leave them out unless asked.
- `persons`: people by slug (`person:<slug>` is their address); `merged_into` names the person a
  merged one became. `identities`: channel identities (`web:<site>:<user>`, …), each on one
  person. `link_codes`: one-time codes joining identities, kept only as SHA-256 digests.
- `thread_predecessors`: a thread kept beside another by a merge of two people, recorded as the
  other's predecessor (its history pages into it).
- `slack_*`: the Slack channel's deliveries, DMs, messages, cursors and outbox (`slack_outbox`:
  posts intended, not yet recorded), the latest refusal Slack answered in each workspace
  (`slack_errors`); and, for roles whose app is installed in many workspaces over OAuth,
  `slack_installations`, `slack_bots` and `slack_oauth_states` — slack_sdk's
  SQLAlchemy stores' own tables, reproduced column for column (the SDK reads and writes them;
  the migration, not the SDK, creates them).
- `endpoint_attempts`: each outbound endpoint's delivery log, its newest attempts only.
- `operator_tokens`: named operator tokens (`core.model.operators`), kept only as SHA-256 digests;
  a revoked one keeps its row (its name is never given again). `default` is the configured one.
- `audit_records`: the audit trail of operator actions (`core.model.audit`), numbered by the
  `audit` counter in `stream_positions` in commit order; never updated, deleted only past the
  trail's retention.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# INTEGER PRIMARY KEY on SQLite (the rowid itself), BIGINT elsewhere.
Position = BigInteger().with_variant(Integer(), "sqlite")

threads = Table(
    "threads",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("set_key", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("memory_thread_only", Boolean, nullable=False, server_default=text("true")),
    Column("last_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("last_at", BigInteger, nullable=False, server_default=text("0")),
    Column("archive_before", BigInteger, nullable=False, server_default=text("0")),
)

thread_participants = Table(
    "thread_participants",
    metadata,
    Column("thread_id", String(32), ForeignKey("threads.id"), primary_key=True),
    Column("address", String(80), primary_key=True),
    Column("state", String(16), nullable=False),
    Index(None, "address", "thread_id"),
)

events = Table(
    "events",
    metadata,
    Column("position", Position, primary_key=True, autoincrement=False),
    Column("id", String(32), nullable=False, unique=True),
    Column("thread_id", String(32), ForeignKey("threads.id"), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("author", String(80)),
    Column("text", Text),
    Column("context", JSON(none_as_null=True)),
    Column("participant", String(80)),
    Column("from_state", String(16)),
    Column("to_state", String(16)),
    Column("target", String(32)),
    Column("reason", Text),
    Column("channel", String(16)),
    Column("in_reply_to", String(32)),
    Column("detail", JSON(none_as_null=True)),
    UniqueConstraint("thread_id", "seq"),
    # A participant's own state changes, read for every filtered timeline. Partial, so that
    # appending a message does not touch it.
    Index(
        "ix_events_state_changes",
        "thread_id",
        "participant",
        "seq",
        sqlite_where=text("kind = 'participant_state_changed'"),
        postgresql_where=text("kind = 'participant_state_changed'"),
    ),
    # A message is retracted at most once; also answers "is this message retracted?".
    Index(
        "ux_events_retraction_target",
        "target",
        unique=True,
        sqlite_where=text("kind = 'retraction'"),
        postgresql_where=text("kind = 'retraction'"),
    ),
    # An approval is resolved at most once, whichever replica or channel answers.
    Index(
        "ux_events_approval_resolution",
        "target",
        unique=True,
        sqlite_where=text("kind = 'approval_resolved'"),
        postgresql_where=text("kind = 'approval_resolved'"),
    ),
)

pending_approvals = Table(
    "pending_approvals",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("thread_id", String(32), ForeignKey("threads.id"), nullable=False),
    Column("run_id", String(32), nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Index(None, "thread_id"),
    Index(None, "expires_at"),
)

stream_positions = Table(
    "stream_positions",
    metadata,
    Column("stream", String(32), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

EVENTS_STREAM = "events"


runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("role", String(64), nullable=False),
    Column("thread_id", String(32), ForeignKey("threads.id")),
    Column("task_id", String(32)),
    Column("cursor", BigInteger, nullable=False, server_default=text("0")),
    Column("status", String(16), nullable=False),
    Column("failures", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text),
    Column("session_id", String(32)),
    Column("last_turn", Integer, nullable=False, server_default=text("0")),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("task_cursor", BigInteger, nullable=False, server_default=text("0")),
    # One conversation run per role per thread, one task run per role per task (NULLs, the
    # other kind's column, are distinct).
    UniqueConstraint("thread_id", "role"),
    UniqueConstraint("task_id", "role"),
)

run_sessions = Table(
    "run_sessions",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("run_id", String(32), ForeignKey("runs.id"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("opened_at", BigInteger, nullable=False),
    Column("state", JSON(none_as_null=True)),
    UniqueConstraint("run_id", "number"),
)

turns = Table(
    "turns",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("run_id", String(32), ForeignKey("runs.id"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("session_id", String(32), nullable=False),
    Column("cause", String(16), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("cursor_from", BigInteger, nullable=False),
    Column("cursor_to", BigInteger, nullable=False),
    Column("queued_at", BigInteger, nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger, nullable=False),
    Column("prompt", JSON, nullable=False),
    Column("steps", JSON, nullable=False),
    Column("replies", JSON, nullable=False),
    Column("attempts", JSON, nullable=False),
    Column("error", Text),
    UniqueConstraint("run_id", "number"),
    # The overview's last hour (`core.storage.overview_reads`): a range of finish times that
    # holds every column the hour's counts read, so that they never read a turn's row.
    Index(None, "finished_at", "started_at", "outcome", "run_id"),
)

memory_entries = Table(
    "memory_entries",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("role", String(64), nullable=False),
    Column("at", BigInteger, nullable=False),
    # jsonb on PostgreSQL: it refuses what it could not compare later (NUL, lone surrogates).
    Column("payload", JSON().with_variant(JSONB(), "postgresql"), nullable=False),
    Column("text", Text, nullable=False),
    Column("thread_id", String(32), ForeignKey("threads.id")),
    Column("thread_only", Boolean, nullable=False),
    Index(None, "role", "at"),
)

memory_redactions = Table(
    "memory_redactions",
    metadata,
    # An operator's redaction of one memory entry: the entry stays (memory is append-only), and
    # recall skips it. At most one per entry.
    Column("entry_id", String(32), ForeignKey("memory_entries.id"), primary_key=True),
    Column("role", String(64), nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("by", String(200), nullable=False),
    Column("reason", Text),
)

run_tokens = Table(
    "run_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("run_id", String(32), ForeignKey("runs.id"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    # the agent session it was minted for (replaced by the run's next, revoked at its end);
    # none for an operator's token
    Column("session_id", String(32)),
)

tasks = Table(
    "tasks",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("title", String(200), nullable=False),
    Column("body", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("assignee", String(64)),
    Column("ext_source", String(500)),
    Column("ext_key", String(500)),
    Column("ext_url", String(500)),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("last_seq", Integer, nullable=False),
    UniqueConstraint("ext_source", "ext_key"),
    Index(None, "assignee", "status"),
)

task_events = Table(
    "task_events",
    metadata,
    Column("position", Position, primary_key=True, autoincrement=False),
    Column("id", String(32), nullable=False, unique=True),
    Column("task_id", String(32), ForeignKey("tasks.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("at", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("actor_kind", String(16), nullable=False),
    Column("actor_name", String(500), nullable=False),
    Column("run_id", String(32)),
    Column("changes", JSON, nullable=False),
    Column("text", Text),
    UniqueConstraint("task_id", "seq"),
)

TASK_EVENTS_STREAM = "task_events"

subscriptions = Table(
    "subscriptions",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id"), primary_key=True),
    Column("task_id", String(32), ForeignKey("tasks.id"), primary_key=True),
    Column("since", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index(None, "task_id"),
)

persons = Table(
    "persons",
    metadata,
    Column("slug", String(64), primary_key=True),
    Column("display_name", String(200), nullable=False),
    Column("email", String(254)),
    Column("active", Boolean, nullable=False, server_default=text("true")),
    Column("created_at", BigInteger, nullable=False),
    Column("merged_into", String(64), ForeignKey("persons.slug")),
    Column("erased_at", BigInteger),
)
# a first contact that joins by email looks the address up case-insensitively
Index("ix_persons_email_lower", func.lower(persons.c.email))

identities = Table(
    "identities",
    metadata,
    Column("address", String(300), primary_key=True),
    Column("person_slug", String(64), ForeignKey("persons.slug"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index(None, "person_slug"),
)

link_codes = Table(
    "link_codes",
    metadata,
    Column("code_hash", String(64), primary_key=True),
    Column("person_slug", String(64), ForeignKey("persons.slug"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("used_at", BigInteger),
    Index(None, "expires_at"),
)

thread_predecessors = Table(
    "thread_predecessors",
    metadata,
    Column("thread_id", String(32), ForeignKey("threads.id"), primary_key=True),
    Column("predecessor_id", String(32), ForeignKey("threads.id"), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
)

# --- the Slack channel (channels/slack) --------------------------------------------------------

slack_events = Table(
    "slack_events",
    metadata,
    # Every Events API delivery handled, by Slack's event_id: a retry is recognised, and so is a
    # delivery to another replica or after a restart.
    Column("event_id", String(64), primary_key=True),
    Column("role", String(64), nullable=False),
    Column("received_at", BigInteger, nullable=False),
    # The workspace it came from (none for receipts kept before 0027): a workspace's last event.
    Column("team_id", String(32)),
    Index(None, "received_at"),
    Index(None, "role", "team_id", "received_at"),
)

slack_conversations = Table(
    "slack_conversations",
    metadata,
    # A DM (or group DM) of a role's Slack app and the thread it is.
    Column("role", String(64), primary_key=True),
    Column("team_id", String(32), primary_key=True),
    Column("channel_id", String(32), primary_key=True),
    Column("thread_id", String(32), ForeignKey("threads.id"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    # The event position when the DM became this thread: what came before is not posted to it.
    Column("since_position", BigInteger, nullable=False, server_default="0"),
    Index(None, "role", "thread_id"),
)

slack_messages = Table(
    "slack_messages",
    metadata,
    # Which Slack message (`ts` in a channel) is which timeline message, both ways.
    Column("role", String(64), primary_key=True),
    Column("channel_id", String(32), primary_key=True),
    Column("ts", String(32), primary_key=True),
    Column("message_id", String(32), nullable=False),
    Column("thread_ts", String(32)),
    Column("outbound", Boolean, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index(None, "role", "message_id", unique=True),
)

slack_cursors = Table(
    "slack_cursors",
    metadata,
    # How far a role's Slack delivery has posted, as a position of the event stream.
    Column("role", String(64), primary_key=True),
    Column("position", BigInteger, nullable=False),
)

slack_outbox = Table(
    "slack_outbox",
    metadata,
    # The intent to post a timeline event to a DM, committed before the post and deleted with
    # the record of its ts: an intent without a ts after a restart may have reached Slack, so
    # the DM's history is looked through (by the event id in the message metadata) first.
    Column("role", String(64), primary_key=True),
    Column("message_id", String(32), primary_key=True),
    Column("channel_id", String(32), nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

slack_errors = Table(
    "slack_errors",
    metadata,
    # The latest refusal Slack answered a call of a role's app in a workspace with (a post, an
    # update, a deletion): its error code (`token_revoked`), the Web API method, and when.
    Column("role", String(64), primary_key=True),
    Column("team_id", String(32), primary_key=True),
    Column("code", String(64), nullable=False),
    Column("method", String(64), nullable=False),
    Column("at", BigInteger, nullable=False),
)

# --- Slack installations over OAuth: slack_sdk's SQLAlchemyInstallationStore and
# SQLAlchemyOAuthStateStore (slack_sdk/oauth/{installation_store,state_store}/sqlalchemy), whose
# definitions these reproduce: the SDK reads and writes them by its own table objects. Times are
# naive UTC `DateTime`s, as the SDK writes them. Rows are per app (`client_id`): one per role.

slack_installations = Table(
    "slack_installations",
    metadata,
    # Every installation of a role's app in a workspace (the newest `installed_at` is in force).
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("client_id", String(32), nullable=False),
    Column("app_id", String(32), nullable=False),
    Column("enterprise_id", String(32)),
    Column("enterprise_name", String(200)),
    Column("enterprise_url", String(200)),
    Column("team_id", String(32)),
    Column("team_name", String(200)),
    Column("bot_token", String(200)),
    Column("bot_id", String(32)),
    Column("bot_user_id", String(32)),
    Column("bot_scopes", String(1000)),
    Column("bot_refresh_token", String(200)),
    Column("bot_token_expires_at", DateTime),
    Column("user_id", String(32), nullable=False),
    Column("user_token", String(200)),
    Column("user_scopes", String(1000)),
    Column("user_refresh_token", String(200)),
    Column("user_token_expires_at", DateTime),
    Column("incoming_webhook_url", String(200)),
    Column("incoming_webhook_channel", String(200)),
    Column("incoming_webhook_channel_id", String(200)),
    Column("incoming_webhook_configuration_url", String(200)),
    Column("is_enterprise_install", Boolean, nullable=False),
    Column("token_type", String(32)),
    Column("installed_at", DateTime, nullable=False),
    Index(
        "slack_installations_idx",
        "client_id",
        "enterprise_id",
        "team_id",
        "user_id",
        "installed_at",
    ),
)

slack_bots = Table(
    "slack_bots",
    metadata,
    # The bot of each installation: its token (and refresh token, with token rotation).
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("client_id", String(32), nullable=False),
    Column("app_id", String(32), nullable=False),
    Column("enterprise_id", String(32)),
    Column("enterprise_name", String(200)),
    Column("team_id", String(32)),
    Column("team_name", String(200)),
    Column("bot_token", String(200)),
    Column("bot_id", String(32)),
    Column("bot_user_id", String(32)),
    Column("bot_scopes", String(1000)),
    Column("bot_refresh_token", String(200)),
    Column("bot_token_expires_at", DateTime),
    Column("is_enterprise_install", Boolean, nullable=False),
    Column("installed_at", DateTime, nullable=False),
    Index("slack_bots_idx", "client_id", "enterprise_id", "team_id", "installed_at"),
)

slack_oauth_states = Table(
    "slack_oauth_states",
    metadata,
    # The `state` of each install begun and not yet finished (consumed once, on the redirect).
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("state", String(200), nullable=False),
    Column("expire_at", DateTime, nullable=False),
)

# --- webhooks (channels/webhooks) ---------------------------------------------------------------

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    # Every inbound delivery handled, by its source's delivery id (`webhook-id`,
    # `X-GitHub-Delivery`, …): a repeated delivery is answered and changes nothing.
    Column("source", String(64), primary_key=True),
    Column("delivery_id", String(200), primary_key=True),
    Column("received_at", BigInteger, nullable=False),
    Index(None, "received_at"),
)

external_subscriptions = Table(
    "external_subscriptions",
    metadata,
    # A run watching a work item by its external key before any task has it: the first event
    # about it makes the task, and these become subscriptions of that task.
    Column("run_id", String(32), ForeignKey("runs.id"), primary_key=True),
    Column("ext_source", String(500), primary_key=True),
    Column("ext_key", String(500), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    Index(None, "ext_source", "ext_key"),
)

endpoints = Table(
    "endpoints",
    metadata,
    # Where the gateway delivers its committed events as Standard Webhooks.
    Column("id", String(32), primary_key=True),
    Column("url", Text, nullable=False),
    Column("secret", String(200), nullable=False),
    Column("kinds", JSON, nullable=False),
    Column("roles", JSON, nullable=False),
    Column("threads", JSON, nullable=False),
    Column("status", String(16), nullable=False),
    Column("reason", Text),
    Column("failures", Integer, nullable=False, server_default=text("0")),
    Column("position", BigInteger, nullable=False),
    Column("task_position", BigInteger, nullable=False),
    Column("next_attempt_at", BigInteger),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

endpoint_attempts = Table(
    "endpoint_attempts",
    metadata,
    # Each endpoint's delivery log: every attempt to deliver an event (numbered per endpoint by
    # `seq`), what it answered, and the standing it left. Only the newest few are kept
    # (`core.storage.endpoints_store.KEPT_ATTEMPTS`); deleted with the endpoint.
    Column("endpoint_id", String(32), ForeignKey("endpoints.id"), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("at", BigInteger, nullable=False),
    Column("event_id", String(32), nullable=False),
    Column("event_type", String(64), nullable=False),
    Column("position", BigInteger, nullable=False),
    Column("http_status", Integer),
    Column("outcome", Text, nullable=False),
    Column("delivered", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("failures", Integer, nullable=False),
)

replicas = Table(
    "replicas",
    metadata,
    # The `rolecall serve` processes sharing this database (docs/scale.md): each registers at
    # start, beats its heart while it serves, and is marked stopped when it stops cleanly.
    Column("id", String(64), primary_key=True),
    Column("address", Text),
    Column("started_at", BigInteger, nullable=False),
    Column("heartbeat_at", BigInteger, nullable=False),
    Column("stopped_at", BigInteger),
)

leases = Table(
    "leases",
    metadata,
    # Who holds what, and until when: a run ("run", run id), an endpoint's delivery, a Slack
    # app's delivery, housekeeping. `fence` grows with every claim and never goes back (a release
    # keeps the row, holder ''), so a holder that lost its lease cannot pass for the new one.
    Column("kind", String(16), primary_key=True),
    Column("subject", String(160), primary_key=True),
    Column("holder", String(64), nullable=False),
    Column("fence", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Index(None, "holder"),
)

cluster_facts = Table(
    "cluster_facts",
    metadata,
    # What every replica must agree on, recorded by the first: fingerprints of the operator
    # token and the widget key (never the secrets themselves).
    Column("name", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

tool_budgets = Table(
    "tool_budgets",
    metadata,
    # The tool calls a run's running turn may still make, counted wherever its agent's calls
    # land (several replicas): written by the run's owner when an attempt begins.
    Column("run_id", String(32), primary_key=True),
    Column("attempt", String(32), nullable=False),
    Column("allowed", Integer, nullable=False),
    Column("used", Integer, nullable=False),
    Column("refused", Integer, nullable=False),
)

rate_buckets = Table(
    "rate_buckets",
    metadata,
    # Token buckets shared by every replica (how fast one identity may post from the widget).
    Column("key", String(300), primary_key=True),
    Column("level", Float, nullable=False),
    Column("at", BigInteger, nullable=False),
)

# --- operators and the audit trail (core.model.operators, core.model.audit) ---------------------

operator_tokens = Table(
    "operator_tokens",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("last_used_at", BigInteger),
    Column("revoked_at", BigInteger),
)

audit_records = Table(
    "audit_records",
    metadata,
    Column("position", Position, primary_key=True, autoincrement=False),
    Column("at", BigInteger, nullable=False),
    Column("actor", String(64), nullable=False),
    Column("client", String(200), nullable=False),
    Column("action", String(64), nullable=False),
    Column("detail", JSON, nullable=False),
    Column("request_id", String(64)),
    Index(None, "at"),
    Index(None, "actor", "position"),
    Index(None, "action", "position"),
)

AUDIT_STREAM = "audit"
"""The `stream_positions` counter that numbers audit records."""

STREAMS = (EVENTS_STREAM, TASK_EVENTS_STREAM, AUDIT_STREAM)
POSITION_SEQUENCES = {
    EVENTS_STREAM: "events_positions",
    TASK_EVENTS_STREAM: "task_events_positions",
    AUDIT_STREAM: "audit_positions",
}
"""PostgreSQL: the sequence that hands out each stream's positions (created by the migration,
outside this metadata; SQLite keeps the `stream_positions` counters)."""

stream_writers = Table(
    "stream_writers",
    metadata,
    # One per writer (a gateway process's writer, on PostgreSQL): the highest position of each
    # stream its committed batches took, and the second key of the transaction-scoped advisory
    # lock (`core.storage.positions.WRITER_LOCKS`, lock_key) each of its batches holds.
    Column("writer", String(64), primary_key=True),
    Column("lock_key", Integer, nullable=False, unique=True),
    Column("events", BigInteger, nullable=False, server_default="0"),
    Column("task_events", BigInteger, nullable=False, server_default="0"),
    Column("audit", BigInteger, nullable=False, server_default="0"),
    Column("registered_at", BigInteger, nullable=False),
    Column("used_at", BigInteger, nullable=False),
)

MEMORY_SEARCH = "memory_search"
"""SQLite's FTS5 table over `memory_entries.text` (columns `text`, `entry_id`)."""

# --- the operator console (core.storage.console_store) ------------------------------------------

console_sessions = Table(
    "console_sessions",
    metadata,
    # A signed-in console session: only the SHA-256 of its id (the cookie holds the id), the
    # name of the operator token it acts as (never the token), its CSRF token, and its times.
    Column("session_hash", String(64), primary_key=True),
    Column("operator", String(64), nullable=False),
    Column("csrf_token", String(64), nullable=False),
    Column("client", String(200), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("last_seen_at", BigInteger, nullable=False),
    Index(None, "expires_at"),
)
