"""Settings, read once at start from `ROLECALL_*` environment variables and passed down.

A bad value stops start-up with one line naming the variable (`SettingsError`). Nothing below the
gateway reads the environment.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "ROLECALL_"


class SettingsError(Exception):
    """A setting is missing or malformed; the message is one line naming the variable."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    var_dir: Path = Path("var")
    database_url: str = Field(default="", description="default: SQLite file under var_dir")
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    api_token: SecretStr | None = None
    roles_dir: Path = Path("manifests/roles")
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["json", "text"] = "json"
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_turns: int = Field(default=64, ge=1, le=100_000)
    turn_attempts: int = Field(default=3, ge=1, le=20)
    retry_backoff: float = Field(default=0.5, ge=0, le=600)

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, value: str) -> str:
        if value and not value.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
            raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
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
    def token_file(self) -> Path:
        return self.var_dir / "api-token"


def load_settings(**overrides: object) -> Settings:
    """Read the environment once; raise `SettingsError` naming the first bad variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "?"
        raw = os.environ.get(ENV_PREFIX + field.upper())
        got = f" (got {raw!r})" if raw is not None and field != "api_token" else ""
        raise SettingsError(f"{ENV_PREFIX}{field.upper()}: {error['msg']}{got}") from None


def ensure_api_token(settings: Settings) -> tuple[str, Path | None]:
    """The operator token: from the setting, else from `var_dir/api-token`, created when missing.

    Returns the token and the file it came from (None when it came from the environment).
    """
    if settings.api_token is not None:
        return settings.api_token.get_secret_value(), None
    path = settings.token_file
    if path.exists():
        token = path.read_text().strip()
        if token:
            return token, path
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token, path
