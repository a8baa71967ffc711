"""A role as its manifest defines it.

    name: concierge                 # the role's address is role:<name>; the file is <name>.yaml
    display_name: Concierge
    description: Greets people and remembers what they ask it to.
    instructions: |
      You are the concierge …
    runtime:
      kind: builtin                 # or acp, a2a, openai (docs/runtimes.md)
      agent: concierge              # the built-in agent: echo or concierge
      delay_ms: 0                   # built-in agents only: make each turn take this long
      stream: false                 # echo only: write each reply word by word first
    concurrent_threads: true        # false: all of the role's turns run one at a time
    max_concurrent_turns: 8         # turns of this role running at once, across threads
    idle_sleep_after: 300           # seconds a session may sit unused before it is put to sleep
    turn_timeout: 120               # seconds a turn may take before it fails
    max_tool_calls_per_turn: 50     # calls of the gateway's tools a turn may make; more are refused
    approvals:                      # optional: who answers what `permissions: …ask` puts to people
      approvers: [person:ops-lead]  # default: every active person of the conversation
      expires_in: 600               # seconds; unanswered by then is a refusal
    retention:                      # optional: how long the role's records are kept (default:
      messages: 365d                # the gateway's ROLECALL_RETAIN_*, forever unless set);
      transcripts: 30d              # memory, deliveries too; `forever` keeps them
    slack:                          # optional: the role's Slack app (docs/slack.md)
      mode: http                    # http (Events API at /slack/<name>/events) or socket
      signing_secret: SLACK_CONCIERGE_SIGNING_SECRET  # names of the settings holding the
      bot_token: SLACK_CONCIERGE_BOT_TOKEN            # secrets, never the secrets themselves
      app_token: SLACK_CONCIERGE_APP_TOKEN            # socket mode only
      # instead of bot_token, to be installed in many workspaces over OAuth (http mode):
      # client_id: SLACK_CONCIERGE_CLIENT_ID
      # client_secret: SLACK_CONCIERGE_CLIENT_SECRET
    widget:                         # optional: how the web widget shows the role (docs/widget.md)
      greeting: Hello! I keep notes for you.   # shown to a visitor whose conversation is empty
      suggestions:                  # at most 3 prompts the visitor can send with one click
        - remember that my desk is 4B
      avatar: https://example.com/concierge.png  # an http(s) image URL, or 1-3 initials ("CG");
                                                 # without it, the display name's initials

Unknown fields are errors (a typo must not be silently ignored).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from core.model.errors import InvalidInput
from core.model.participants import MAX_NAME_LENGTH, Address
from core.model.retention import Retention, parse_duration
from core.model.roles.permissions import DECISIONS, Decision

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


class BuiltinRuntime(BaseModel):
    """A Python agent that runs inside the gateway."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["builtin"]
    agent: Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH)]
    delay_ms: Annotated[int, Field(ge=0, le=600_000)] = 0
    stream: bool = False
    """Built-in agents that can (echo) send each reply word by word before it is whole."""


_SETTING = re.compile(r"[A-Z][A-Z0-9_]*")


def _setting_name(value: str | None) -> str | None:
    if value is not None and not _SETTING.fullmatch(value):
        raise ValueError(
            "must be the NAME of the setting (environment variable) that holds the secret, "
            "like SLACK_CONCIERGE_BOT_TOKEN — never the secret itself"
        )
    return value


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_names(values: dict[str, str]) -> dict[str, str]:
    for name in values:
        if not _ENV_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not an environment variable name")
    return values


def _permissions(value: object) -> object:
    """One clear error for a policy of the wrong shape (rather than one per form it is not)."""
    shapes = "allow, deny, ask, a list of what is allowed, or a mapping {tool: allow|deny|ask}"
    if isinstance(value, str):
        if value not in DECISIONS:
            raise ValueError(f"{value!r} is not a policy; use {shapes}")
    elif isinstance(value, dict):
        for entry, decision in value.items():
            if decision not in DECISIONS:
                raise ValueError(
                    f"{entry!r}: {decision!r} is not a decision; use allow, deny or ask"
                )
    elif not isinstance(value, list | tuple) or not all(isinstance(e, str) for e in value):
        raise ValueError(f"must be {shapes}")
    return value


Permissions = Annotated[
    Decision | tuple[str, ...] | dict[str, Decision], BeforeValidator(_permissions)
]


class AcpRuntime(BaseModel):
    """An agent process spoken to over the Agent Client Protocol (stdio JSON-RPC)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["acp"]
    command: Annotated[str, Field(min_length=1, max_length=1_000)]
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables given to the process as they are written here."""
    secrets: dict[str, str] = Field(default_factory=dict)
    """Environment variables given to the process from settings: {VARIABLE: SETTING_NAME}."""
    permissions: Permissions = "deny"
    """How the agent's permission requests are answered: all allowed, all denied, all asked of
    the people, only the tools (by name or kind) listed allowed, or per tool in a mapping
    (`core.model.roles.permissions`)."""
    max_processes: Annotated[int, Field(ge=1, le=10_000)] = 16
    """Agent processes of this role alive at once; more sessions wait."""

    _checked = field_validator("env", "secrets")(classmethod(lambda cls, v: _env_names(v)))

    @property
    def setting_names(self) -> tuple[str, ...]:
        return tuple(self.secrets.values())

    @field_validator("secrets")
    @classmethod
    def _setting_names(cls, value: dict[str, str]) -> dict[str, str]:
        for setting in value.values():
            _setting_name(setting)
        return value


class A2aAuth(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["bearer", "api_key"] = "bearer"
    token: str
    """The NAME of the setting holding the token or key."""
    header: str = "Authorization"
    """Where an `api_key` goes (a bearer token always goes in Authorization)."""

    _token = field_validator("token")(classmethod(lambda cls, value: _setting_name(value)))


class A2aRuntime(BaseModel):
    """A remote agent spoken to over A2A."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["a2a"]
    card_url: Annotated[str, Field(min_length=1, max_length=2_000)]
    """The agent card's URL (`…/.well-known/agent-card.json`)."""
    auth: A2aAuth | None = None

    @property
    def setting_names(self) -> tuple[str, ...]:
        return (self.auth.token,) if self.auth is not None else ()

    @field_validator("card_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value


class OpenAIRuntime(BaseModel):
    """Any OpenAI-compatible chat-completions endpoint; the gateway keeps the history and runs
    the tool calls."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["openai"]
    base_url: Annotated[str, Field(min_length=1, max_length=2_000)]
    """e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1 (Ollama)."""
    model: Annotated[str, Field(min_length=1, max_length=200)]
    api_key: str | None = None
    """The NAME of the setting holding the API key (none for local servers)."""
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    max_tool_calls: Annotated[int, Field(ge=0, le=100)] = 8
    """Tool calls one turn may make before it is cut off."""
    stream: bool = True
    """Ask for the reply streamed (shown as it is written where a channel can)."""
    permissions: Permissions = "allow"
    """Which of the gateway's tools the model may call without asking: by default all; a
    mapping may make some `ask` (held until a person allows the call) or `deny`."""

    _key = field_validator("api_key")(classmethod(lambda cls, value: _setting_name(value)))

    @property
    def setting_names(self) -> tuple[str, ...]:
        return (self.api_key,) if self.api_key is not None else ()

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")


def _retention(value: object) -> object:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except InvalidInput as wrong:
        raise PydanticCustomError("retention", wrong.message) from None


RetentionValue = Annotated[timedelta | None, BeforeValidator(_retention)]


class RetentionSettings(BaseModel):
    """How long the role's records are kept (`core.model.retention`): a duration like `365d`,
    `forever`, or — left out — the gateway's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: RetentionValue = None
    memory: RetentionValue = None
    transcripts: RetentionValue = None
    deliveries: RetentionValue = None

    @property
    def rules(self) -> Retention:
        return Retention(
            messages=self.messages,
            memory=self.memory,
            transcripts=self.transcripts,
            deliveries=self.deliveries,
        )


class ApprovalSettings(BaseModel):
    """Who answers the role's permission requests that its `permissions` put to people, and how
    long they have (`docs/approvals.md`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approvers: tuple[str, ...] = ()
    """People (`person:…` addresses) who answer; none: every active person of the
    conversation. Only those who are people of the conversation are asked."""
    expires_in: Annotated[float, Field(ge=1, le=7 * 86_400)] = 600.0
    """Seconds before an unanswered request expires — a refusal."""

    @field_validator("approvers")
    @classmethod
    def _people(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for address in value:
            if not address.startswith("person:") or len(address) <= len("person:"):
                raise ValueError(f"{address!r} is not a person's address (person:<slug>)")
        return tuple(dict.fromkeys(value))


Runtime = Annotated[
    BuiltinRuntime | AcpRuntime | A2aRuntime | OpenAIRuntime, Field(discriminator="kind")
]


class SlackApp(BaseModel):
    """The role's Slack app: how Slack reaches it, and which settings hold its secrets.

    The app is installed one of two ways: in one workspace, with that workspace's bot token in a
    setting (`bot_token`); or in any number of workspaces over OAuth (`client_id` and
    `client_secret`; `/slack/<name>/install`), each workspace's bot token kept in the database.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["http", "socket"] = "http"
    signing_secret: str | None = None
    """Setting holding the app's signing secret (HTTP mode: every request is verified)."""
    bot_token: str | None = None
    """Setting holding the bot token (`xoxb-…`) of the one workspace the app is installed in."""
    app_token: str | None = None
    """Setting holding the app-level token (`xapp-…`) Socket Mode connects with."""
    client_id: str | None = None
    """Setting holding the app's OAuth client ID (installed in many workspaces over OAuth)."""
    client_secret: str | None = None
    """Setting holding the app's OAuth client secret."""

    _names = field_validator(
        "signing_secret", "bot_token", "app_token", "client_id", "client_secret"
    )(classmethod(lambda cls, value: _setting_name(value)))

    @property
    def oauth(self) -> bool:
        """Installed in many workspaces over OAuth (rather than in one, with `bot_token`)."""
        return self.client_id is not None

    @property
    def setting_names(self) -> tuple[str, ...]:
        """The names of every setting the app's secrets are read from."""
        named = (
            self.signing_secret,
            self.bot_token,
            self.app_token,
            self.client_id,
            self.client_secret,
        )
        return tuple(name for name in named if name is not None)

    @model_validator(mode="after")
    def _complete(self) -> SlackApp:
        if self.mode == "http" and self.signing_secret is None:
            raise _refused("signing_secret", "mode http needs it (the setting holding it)")
        if self.mode == "socket" and self.app_token is None:
            raise _refused("app_token", "mode socket needs it (the setting holding it)")
        oauth = self.client_id is not None or self.client_secret is not None
        if self.bot_token is not None and oauth:
            field = "client_id" if self.client_id is not None else "client_secret"
            raise _refused(
                field,
                "give bot_token (one workspace) or client_id and client_secret (installed over "
                "OAuth), not both",
            )
        if self.bot_token is None and not oauth:
            raise _refused(
                "bot_token",
                "needed, unless the app is installed over OAuth (client_id and client_secret)",
            )
        if oauth and self.client_id is None:
            raise _refused("client_id", "client_secret needs it (the setting holding it)")
        if oauth and self.client_secret is None:
            raise _refused("client_secret", "client_id needs it (the setting holding it)")
        if oauth and self.mode == "socket":
            raise _refused(
                "client_id",
                "installing over OAuth needs mode http (the install and its redirect are pages "
                "of the gateway's public URL)",
            )
        return self


def _refused(field: str, message: str) -> ValidationError:
    """A validation error of one field of the `slack:` section, so that it names the field
    (`slack.<field>: …`) rather than the section."""
    error = PydanticCustomError("slack_app", message)
    details = InitErrorDetails(type=error, loc=(field,), input=None)
    return ValidationError.from_exception_data("SlackApp", [details])


MAX_SUGGESTIONS = 3
_INITIALS = re.compile(r"\S{1,3}")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value.strip()


_NotBlank = AfterValidator(_not_blank)


class WidgetLook(BaseModel):
    """How the web widget presents the role to a visitor: a greeting and suggested prompts while
    the conversation is empty, and an avatar (an image, or initials) beside its name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    greeting: Annotated[str, Field(min_length=1, max_length=1_000), _NotBlank] | None = None
    """Shown as the role's first words (Markdown, like its messages); never stored."""
    suggestions: Annotated[
        tuple[Annotated[str, Field(min_length=1, max_length=200), _NotBlank], ...],
        Field(max_length=MAX_SUGGESTIONS),
    ] = ()
    """Prompts the visitor may send with one click, in this order."""
    avatar: Annotated[str, Field(min_length=1, max_length=2_000)] | None = None
    """An http:// or https:// image URL, or 1 to 3 characters shown as initials."""

    @field_validator("suggestions")
    @classmethod
    def _suggestions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("each suggestion must differ from the others")
        return value

    @field_validator("avatar")
    @classmethod
    def _avatar(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value.startswith(("http://", "https://")):
            if not urlsplit(value).hostname or any(c.isspace() or c in "<>\"'" for c in value):
                raise ValueError("must be an image URL with a host, without spaces or quotes")
            return value
        if not _INITIALS.fullmatch(value):
            raise ValueError(
                "must be an http:// or https:// image URL, or initials (1 to 3 characters: CG)"
            )
        return value

    @property
    def avatar_url(self) -> str | None:
        """The avatar's image URL, when the avatar is one (rather than initials)."""
        avatar = self.avatar
        return avatar if avatar is not None and avatar.startswith(("http://", "https://")) else None


def initials_of(display_name: str) -> str:
    """Two letters for an avatar without an image: the first letters of the first two words
    ("Front Desk" → "FD"), or of the one word ("Concierge" → "C")."""
    words = [word for word in re.split(r"[\s_.-]+", display_name) if word[:1].isalnum()]
    return "".join(word[0] for word in words[:2]).upper() or display_name[:1].upper() or "?"


class Role(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    display_name: Annotated[str, Field(min_length=1, max_length=200)]
    description: Annotated[str, Field(max_length=2_000)] = ""
    instructions: Annotated[str, Field(max_length=100_000)] = ""
    runtime: Runtime
    concurrent_threads: bool = True
    max_concurrent_turns: Annotated[int, Field(ge=1, le=10_000)] = 8
    idle_sleep_after: Annotated[float, Field(gt=0, le=7 * 86_400)] = 300.0
    turn_timeout: Annotated[float, Field(gt=0, le=86_400)] = 120.0
    max_tool_calls_per_turn: Annotated[int, Field(ge=0, le=10_000)] = 50
    """Calls of the gateway's tools (MCP, HTTP or in process) one turn may make; the next is
    refused with `tool_budget_spent` and the refusal is noted in the turn's transcript."""
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    slack: SlackApp | None = None
    widget: WidgetLook = Field(default_factory=WidgetLook)

    @field_validator("name")
    @classmethod
    def _role_name(cls, value: str) -> str:
        if not _NAME.fullmatch(value) or len(value) > MAX_NAME_LENGTH:
            raise ValueError(
                "must be lower case letters, digits, '.', '_' or '-', starting with a letter "
                f"or digit, at most {MAX_NAME_LENGTH} characters"
            )
        return value

    @property
    def address(self) -> Address:
        return Address(f"role:{self.name}")

    @property
    def initials(self) -> str:
        """What the widget shows for the role when no avatar image is given."""
        avatar = self.widget.avatar
        if avatar is not None and self.widget.avatar_url is None:
            return avatar
        return initials_of(self.display_name)

    @property
    def setting_names(self) -> tuple[str, ...]:
        """The settings this role's manifest names: its runtime's and its Slack app's secrets."""
        runtime = () if isinstance(self.runtime, BuiltinRuntime) else self.runtime.setting_names
        slack = self.slack.setting_names if self.slack is not None else ()
        return (*runtime, *slack)
