"""One slack-bolt app per role, configured explicitly.

Bolt and the SDK read `SLACK_*` environment variables when they are not given a value (and, for
OAuth, would keep installations in files under the home directory). A role's app gets every
value from the manifest's named settings instead, and is built with `SLACK_*` hidden from the
environment, so nothing of a different app's configuration can leak in.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from core.roles import ManifestError, Role

WEB_API_TIMEOUT = 10

_bolt_log = logging.getLogger("rolecall.slack.bolt")
# Bolt logs a refused request's body at INFO: people's messages must not reach the logs.
_bolt_log.setLevel(logging.WARNING)
RATE_LIMIT_RETRIES = 5


@dataclass(frozen=True)
class SlackCredentials:
    signing_secret: str | None
    bot_token: str
    app_token: str | None


def credentials(role: Role, secrets: Mapping[str, str], *, where: str) -> SlackCredentials:
    """The role's Slack secrets, from the settings its manifest names (`ManifestError` naming
    the manifest, the field and the missing setting)."""
    assert role.slack is not None

    def named(field: str, name: str | None) -> str | None:
        if name is None:
            return None
        value = secrets.get(name, "").strip()
        if not value:
            raise ManifestError(f"{where}: slack.{field}: the setting {name} is not set")
        return value

    bot_token = named("bot_token", role.slack.bot_token)
    assert bot_token is not None
    return SlackCredentials(
        signing_secret=named("signing_secret", role.slack.signing_secret),
        bot_token=bot_token,
        app_token=named("app_token", role.slack.app_token),
    )


def web_client(token: str, api_url: str) -> AsyncWebClient:
    """A Web API client that waits out rate limits (429 `Retry-After`: Slack did not act on
    the call). It does not retry a call whose connection broke — Slack may have acted on it;
    the delivery worker looks before it posts again."""
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        timeout=WEB_API_TIMEOUT,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)],
    )


def bolt_app(role: Role, creds: SlackCredentials, client: AsyncWebClient) -> AsyncApp:
    socket = role.slack is not None and role.slack.mode == "socket"
    with _no_slack_environment():
        return AsyncApp(
            name=f"rolecall-{role.name}",
            logger=_bolt_log,
            client=client,
            signing_secret=creds.signing_secret or "",
            request_verification_enabled=not socket,
            # The person's message is committed before Slack gets its 200.
            process_before_response=True,
            ignoring_self_events_enabled=True,
            ssl_check_enabled=True,
            url_verification_enabled=True,
        )


@contextlib.contextmanager
def _no_slack_environment() -> Iterator[None]:
    hidden = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("SLACK_")}
    try:
        yield
    finally:
        os.environ.update(hidden)
