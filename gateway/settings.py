"""Settings, read once at start from `ROLECALL_*` environment variables and passed down.

A bad value stops start-up with one line naming the variable (`SettingsError`). Nothing below the
gateway reads the environment.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings import SettingsError as PydanticSettingsError

from channels.edge.leasing import ONE_PROCESS, LeaseTerms
from channels.slack.routes import SlackConfig
from channels.web.routes import WidgetConfig
from channels.web.sites import Site
from channels.webhooks.sources import configured_sources
from core.model.errors import InvalidInput
from core.model.retention import Retention, parse_duration
from core.model.webhooks import Source
from core.storage.engine import is_sqlite

if TYPE_CHECKING:
    from gateway.replica import ThisReplica

ENV_PREFIX = "ROLECALL_"
_SLACK_TEAM_ID = re.compile(r"T[A-Z0-9]+")


class SettingsError(Exception):
    """A setting is missing or malformed; the message is one line naming the variable."""


class SiteSettings(BaseModel):
    """A site that embeds the widget: the secret that signs its users' tokens (none: anonymous
    visitors only) and the page origins allowed to use the widget for it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    secret: SecretStr | None = None
    origins: tuple[str, ...] = ()

    @field_validator("secret")
    @classmethod
    def _strong(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError("a site's secret must be at least 32 characters")
        return value

    @field_validator("origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for origin in value:
            if not origin.startswith(("http://", "https://")) or origin.count("/") != 2:
                raise ValueError(f"{origin!r} is not an origin like https://shop.example.com")
        return tuple(origin.rstrip("/") for origin in value)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    var_dir: Path = Path("var")
    database_url: str = Field(default="", description="default: SQLite file under var_dir")
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    public_url: str = Field(default="", description="default: http://{host}:{port}")
    api_token: SecretStr | None = None
    roles_dir: Path = Path("manifests/roles")
    allow_unserved_roles: bool = False
    """Accept conversations with, and tasks assigned to, roles this gateway does not serve (roles
    another deployment on the same database serves); refused as `unknown_role` otherwise."""
    sources_dir: Path = Path("manifests/sources")
    """Webhook sources, one manifest a source (docs/webhooks.md); the default may be missing."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "json", "text"] = "auto"
    """How log lines are written on stderr: `json` (one object a line), `text` (a line for a
    person), or `auto`: text when stderr is a terminal, JSON otherwise (`gateway.logs`)."""
    traces: bool = False
    """Make OpenTelemetry traces (docs/tracing.md), sent as the standard `OTEL_*` variables
    say; also on whenever `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`gateway.tracing`)."""
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_turns: int = Field(default=64, ge=1, le=100_000)
    turn_attempts: int = Field(default=3, ge=1, le=20)
    retry_backoff: float = Field(default=0.5, ge=0, le=600)
    sites: dict[str, SiteSettings] = Field(default_factory=dict)
    widget_key: SecretStr | None = None
    slack_api_url: str = "https://slack.com/api/"
    """Slack's Web API; the tests point it at a fake server on 127.0.0.1."""
    slack_pace: float = Field(default=1.0, ge=0, le=60)
    """Seconds between two posts to one Slack channel."""
    slack_email_link_teams: Annotated[frozenset[str], NoDecode] = frozenset()
    """Slack workspaces (team ids, comma-separated) whose people join the one active person with
    their verified email on first contact (docs/slack.md); none by default."""
    widget_post_rate: float = Field(default=30, gt=0, le=100_000)
    """Messages a minute one identity may post from the widget (with a burst of 10)."""
    endpoints_allow_private: bool = False
    """Outbound webhook endpoints may be at loopback, private or link-local addresses."""
    endpoints_backoff_base: float = Field(default=1.0, gt=0, le=3600)
    """Seconds before the first retry of a failed delivery; doubled each failure after."""
    endpoints_backoff_cap: float = Field(default=300.0, gt=0, le=86_400)
    """The longest wait between two attempts (a `Retry-After` may ask for more, up to an hour)."""
    endpoints_park_after: int = Field(default=10, ge=1, le=1000)
    """Failed attempts in a row that park an endpoint until an operator replays it."""
    endpoints_timeout: float = Field(default=10.0, gt=0, le=300)
    """Seconds an endpoint has to answer one delivery."""
    receipt_days: float = Field(default=7.0, gt=0, le=3650)
    """Days a delivery receipt (a Slack event id, a webhook delivery id) is kept to recognise
    the same delivery made again; after that, housekeeping deletes it."""
    housekeeping_every: float = Field(default=3600.0, ge=1, le=86_400)
    """Seconds between two housekeeping passes."""
    retain_messages: str = "forever"
    """How long conversations' messages are kept, unless a role says otherwise (`365d`, `12h`,
    `forever`; `core.model.retention`)."""
    retain_memory: str = "forever"
    """How long a role's memory entries are kept, unless the role says otherwise."""
    retain_transcripts: str = "forever"
    """How long the record of a run's turns is kept, unless the role says otherwise."""
    retain_deliveries: str = "forever"
    """How long the record of where an event was delivered (its Slack post) is kept."""
    audit_retention: float | None = Field(default=None, gt=0, le=36_500)
    """Days an audit record is kept (docs/audit.md); housekeeping deletes older ones. Default:
    kept forever."""
    trusted_proxies: Annotated[tuple[IPv4Network | IPv6Network, ...], NoDecode] = ()
    """The load balancers (addresses or networks, comma-separated) whose `X-Forwarded-For`
    names the client: the widget's limit on new visitors per address, the access log."""
    replica_id: str = Field(default="", pattern=r"^([A-Za-z0-9][A-Za-z0-9._-]{0,63})?$")
    """This process's name among the replicas of one database (docs/scale.md); default: the
    host name and a random suffix, new at every start."""
    replica_timeout: float = Field(default=8.0, ge=1, le=3600)
    """Seconds a replica may go without a heartbeat before its runs are taken over (it beats
    every fifth of that)."""

    @field_validator("retain_messages", "retain_memory", "retain_transcripts", "retain_deliveries")
    @classmethod
    def _retention(cls, value: str) -> str:
        try:
            parse_duration(value)
        except InvalidInput as wrong:
            raise ValueError(wrong.message) from None
        return value

    @property
    def retention(self) -> Retention:
        """The default retention of every kind of record."""
        return Retention(
            messages=parse_duration(self.retain_messages),
            memory=parse_duration(self.retain_memory),
            transcripts=parse_duration(self.retain_transcripts),
            deliveries=parse_duration(self.retain_deliveries),
        )

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, value: str) -> str:
        if value and not value.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
            raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
        return value

    @field_validator("public_url")
    @classmethod
    def _absolute_http(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an absolute http:// or https:// URL")
        return value

    @field_validator("sites")
    @classmethod
    def _site_names(cls, value: dict[str, SiteSettings]) -> dict[str, SiteSettings]:
        for name in value:
            if (
                not name
                or not name.replace("-", "").replace("_", "").isalnum()
                or name != name.lower()
            ):
                raise ValueError(f"site name {name!r} must be lower-case letters, digits, - or _")
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: object) -> object:
        if isinstance(value, str):  # from the environment: `10.0.0.0/8,192.168.1.5`
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple):
            return value
        try:
            return tuple(ip_network(str(part), strict=False) for part in value)
        except ValueError as exc:
            raise ValueError(
                f"{exc} (give addresses or networks like 10.0.0.0/8, separated by commas)"
            ) from None

    @field_validator("slack_email_link_teams", mode="before")
    @classmethod
    def _slack_team_ids(cls, value: object) -> object:
        if isinstance(value, str):  # from the environment: `T0123ABCD,T0456EFGH`
            value = [part for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple | set | frozenset):
            return value  # pydantic says what is wrong with it
        teams: set[str] = set()
        for team in value:
            if not isinstance(team, str) or not _SLACK_TEAM_ID.fullmatch(team.strip().upper()):
                raise ValueError(
                    f"{team!r} is not a Slack team id like T0123ABCD (give team ids, not names, "
                    "separated by commas)"
                )
            teams.add(team.strip().upper())
        return frozenset(teams)

    @field_validator("widget_key")
    @classmethod
    def _key_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError("must be at least 32 characters")
        return value

    @field_validator("api_token")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters")
        return value

    @property
    def database(self) -> str:
        """The database URL, defaulting to the SQLite file `var_dir/rolecall.db`."""
        return self.database_url or f"sqlite+aiosqlite:///{self.var_dir / 'rolecall.db'}"

    @property
    def base_url(self) -> str:
        """Where agents and browsers reach the gateway: `public_url`, or the address it listens
        on (the loopback address when it listens on every interface)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    @property
    def token_file(self) -> Path:
        return self.var_dir / "api-token"

    @property
    def widget_key_file(self) -> Path:
        return self.var_dir / "widget-key"


_SECRET_FIELDS = frozenset({"api_token", "widget_key", "sites"})
"""Settings whose raw value is never repeated in an error (they hold secrets)."""


def load_settings(**overrides: object) -> Settings:
    """Read the environment once; raise `SettingsError` naming the first bad variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "?"
        where = ".".join(str(part) for part in error["loc"][1:])
        raw = os.environ.get(ENV_PREFIX + field.upper())
        got = f" (got {raw!r})" if raw is not None and field not in _SECRET_FIELDS else ""
        at = f" at {where}" if where else ""
        raise SettingsError(f"{ENV_PREFIX}{field.upper()}{at}: {error['msg']}{got}") from None
    except PydanticSettingsError as exc:  # a complex value (JSON) that does not parse
        named = _FIELD_IN_MESSAGE.search(str(exc))
        name = named.group(1).upper() if named else "?"
        raise SettingsError(f"{ENV_PREFIX}{name}: not valid JSON") from None


_FIELD_IN_MESSAGE = re.compile(r'field "([a-z_]+)"')


def ensure_api_token(settings: Settings) -> tuple[str, Path | None]:
    """The operator token: from the setting, else from `var_dir/api-token`, created when missing.

    Returns the token and the file it came from (None when it came from the environment).
    """
    if settings.api_token is not None:
        return settings.api_token.get_secret_value(), None
    return _secret_file(settings.token_file), settings.token_file


def ensure_widget_key(settings: Settings) -> str:
    """The key that signs widget sessions and visitor tokens: from the setting, else from
    `var_dir/widget-key`, created when missing (so visitors survive a restart)."""
    if settings.widget_key is not None:
        return settings.widget_key.get_secret_value()
    return _secret_file(settings.widget_key_file)


def widget_config(settings: Settings) -> WidgetConfig:
    """What the widget takes from the settings; its key is read (or created) when it starts."""
    sites = [
        Site(
            name,
            site.secret.get_secret_value() if site.secret is not None else None,
            frozenset(site.origins),
        )
        for name, site in settings.sites.items()
    ]
    return WidgetConfig(
        sites=sites,
        key=lambda: ensure_widget_key(settings),
        post_rate=settings.widget_post_rate,
        shared_rate=not is_sqlite(settings.database),
        trusted_proxies=settings.trusted_proxies,
        base_url=settings.base_url,
    )


def lease_terms(settings: Settings, replica: ThisReplica) -> LeaseTerms:
    """How this process holds what one replica at a time works (a delivery, housekeeping): on
    PostgreSQL under leases, as `replica`; on SQLite it is the only process and holds it all."""
    if is_sqlite(settings.database):
        return ONE_PROCESS
    return LeaseTerms(holder=replica.id, ttl=replica.ttl, retry_every=replica.every)


def slack_config(settings: Settings, leases: LeaseTerms = ONE_PROCESS) -> SlackConfig:
    """What the Slack channel takes from the settings (and `leases`: how its deliveries are
    held, `lease_terms`)."""
    return SlackConfig(
        roles_dir=settings.roles_dir,
        api_url=settings.slack_api_url,
        database_url=settings.database,
        base_url=settings.base_url,
        pace=settings.slack_pace,
        email_link_teams=settings.slack_email_link_teams,
        leases=leases,
    )


def webhook_sources(settings: Settings) -> dict[str, Source]:
    """The sources in `ROLECALL_SOURCES_DIR` (`ManifestError` naming the file and the field).
    The default directory may be missing (no sources); a directory the operator set must exist."""
    default = "sources_dir" not in settings.model_fields_set
    return configured_sources(settings.sources_dir, default=default)


def _secret_file(path: Path) -> str:
    """The secret kept in `path`, created (mode 0600, random) when missing or empty."""
    if path.exists():
        token = path.read_text().strip()
        if token:
            return token
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token


def named_secrets(names: Iterable[str]) -> dict[str, str]:
    """The values of settings that manifests name (a Slack app's tokens, say), read from the
    environment once at start; missing ones are simply absent (the manifest's check names
    them)."""
    return {name: os.environ[name] for name in names if name in os.environ}
