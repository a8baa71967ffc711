"""One slack-bolt app per role, configured explicitly, and the Web API clients it acts with.

Bolt and the SDK read `SLACK_*` environment variables when they are not given a value (and, for
OAuth, would keep installations in files under the home directory). A role's app gets every
value from the manifest's named settings instead, and is built with `SLACK_*` hidden from the
environment, so nothing of a different app's configuration can leak in. Installations over OAuth
are kept in the gateway's database (`channels/slack/install.py`).

Which bot token acts in a workspace (a team):

- an app installed in one workspace: the token from settings, for everything;
- an app installed over OAuth: the token of the team's installation. Bolt authorizes each event
  from the installation store, and the inbound handlers act with the client it authorized for
  that event (bolt's `client` argument). The delivery worker asks `Clients` for the team's
  client: the bot is looked up in the store when first needed and its client kept until the
  token is about to expire — it is then rotated first, when the app has token rotation (a
  refresh token) — or until Slack refuses the token (`Clients.refused`): a lookup that finds a
  refused token again finds the app not installed there (`NotInstalled`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackTokenRotationError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient

from channels.slack.verify import without_person_text
from core.model.errors import InvalidInput
from core.model.roles import ManifestError, Role
from core.model.values import check_value

WEB_API_TIMEOUT = 10

log = logging.getLogger("rolecall.slack")
_bolt_log = logging.getLogger("rolecall.slack.bolt")
# Bolt logs a refused request's body at INFO: people's messages must not reach the logs.
_bolt_log.setLevel(logging.WARNING)
_sdk_log = logging.getLogger("rolecall.slack.sdk")
# The SDK logs every call's parameters and answer at DEBUG (people's messages among them), and
# decides whether to format those lines by the logger's own level, not the effective one: a
# level of its own spares every call that work, and keeps messages out of the logs.
_sdk_log.setLevel(logging.INFO)
RATE_LIMIT_RETRIES = 5
ROTATE_BEFORE = 120 * 60
"""Seconds before a rotating token expires when it is rotated (bolt's default too)."""
REVOKED = frozenset(
    {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"}
)
"""Slack's answers that say the token itself is no good."""


@dataclass(frozen=True)
class SlackCredentials:
    signing_secret: str | None
    bot_token: str | None
    """The one workspace's bot token; None when the app is installed over OAuth."""
    app_token: str | None
    client_id: str | None = None
    client_secret: str | None = None


def credentials(role: Role, secrets: Mapping[str, str], *, where: str) -> SlackCredentials:
    """The role's Slack secrets, from the settings its manifest names (`ManifestError` naming
    the manifest, the field and the missing setting)."""
    slack = role.slack
    assert slack is not None

    def named(field: str, name: str | None) -> str | None:
        if name is None:
            return None
        value = secrets.get(name, "").strip()
        if not value:
            raise ManifestError(f"{where}: slack.{field}: the setting {name} is not set")
        return value

    return SlackCredentials(
        signing_secret=named("signing_secret", slack.signing_secret),
        bot_token=named("bot_token", slack.bot_token),
        app_token=named("app_token", slack.app_token),
        client_id=named("client_id", slack.client_id),
        client_secret=named("client_secret", slack.client_secret),
    )


def web_client(
    token: str | None, api_url: str, session: aiohttp.ClientSession | None = None
) -> AsyncWebClient:
    """A Web API client that waits out rate limits (429 `Retry-After`: Slack did not act on
    the call). It does not retry a call whose connection broke — Slack may have acted on it;
    the delivery worker looks before it posts again. Without a token it is the app's own client
    (OAuth, and what bolt copies for each event, with the token it authorized). With `session`
    its calls share that session's connections (without one, every call opens a connection)."""
    return AsyncWebClient(
        token=token,
        base_url=api_url,
        timeout=WEB_API_TIMEOUT,
        session=session,
        logger=_sdk_log,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)],
    )


def bolt_app(
    role: Role,
    creds: SlackCredentials,
    client: AsyncWebClient,
    *,
    oauth: AsyncOAuthFlow | None = None,
) -> AsyncApp:
    """The role's bolt app. With `oauth`, events are authorized from its installation store
    (the handlers are given the client bolt authorized for the event's workspace)."""
    socket = role.slack is not None and role.slack.mode == "socket"
    with no_slack_environment():
        app = AsyncApp(
            name=f"rolecall-{role.name}",
            logger=_bolt_log,
            client=client,
            signing_secret=creds.signing_secret or "",
            installation_store=oauth.settings.installation_store if oauth else None,
            installation_store_bot_only=True if oauth else None,
            oauth_flow=oauth,
            request_verification_enabled=not socket,
            # The person's message is committed before Slack gets its 200.
            process_before_response=True,
            ignoring_self_events_enabled=True,
            ssl_check_enabled=True,
            url_verification_enabled=True,
            # What the handlers do not use is not built for every event: the assistant
            # thread's `say`/`set_status` kwargs (a listener middleware, and a second build of
            # every kwarg, per event) and the token of a workflow step's function.
            attaching_conversation_kwargs_enabled=False,
            attaching_function_token_enabled=False,
        )
    if oauth is not None:
        app.enable_token_revocation_listeners()  # app_uninstalled, tokens_revoked
    if socket:  # over HTTP the route checked the body already (channels/slack/verify.py)
        app.middleware(_acceptable_values)
    return app


async def _acceptable_values(
    req: AsyncBoltRequest, resp: BoltResponse, next: Callable[[], Awaitable[BoltResponse]]
) -> BoltResponse:
    """A Socket Mode envelope whose values, but for a person's text, `core.model.values` does not
    accept is acknowledged and dropped (logged), before any handler: Slack would only send it
    again."""
    try:
        check_value(without_person_text(req.body), "the event")
    except InvalidInput as error:
        log.info("slack event dropped: %s", error.message)
        return BoltResponse(status=200, body="")
    return await next()


# --- acting in a workspace ----------------------------------------------------------------------


class NotInstalled(Exception):
    """The role's app has no usable installation in the workspace: never installed, removed, or
    its token refused. Nothing can be posted there."""


@dataclass
class _Held:
    client: AsyncWebClient
    expires_at: int | None


class Clients:
    """The Web API client that acts in a workspace: `await clients.for_team(team_id)`."""

    def __init__(
        self,
        api_url: str,
        *,
        one: AsyncWebClient | None = None,
        installations: AsyncInstallationStore | None = None,
        rotator: AsyncTokenRotator | None = None,
    ) -> None:
        self._api_url = api_url
        self._one = one
        self._installations = installations
        self._rotator = rotator
        self._held: dict[str, _Held] = {}
        self._refused: set[str] = set()
        self._lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def one_workspace(cls, client: AsyncWebClient) -> Clients:
        """The app installed in one workspace: its one client, whatever the team."""
        return cls("", one=client)

    @classmethod
    def installed(
        cls,
        api_url: str,
        installations: AsyncInstallationStore,
        rotator: AsyncTokenRotator,
        session: aiohttp.ClientSession | None = None,
    ) -> Clients:
        """The app installed over OAuth: each team's bot, from the installation store."""
        clients = cls(api_url, installations=installations, rotator=rotator)
        clients._session = session
        return clients

    async def for_team(self, team_id: str) -> AsyncWebClient:
        """The client with the team's bot token (`NotInstalled` when there is none)."""
        if self._one is not None:
            return self._one
        async with self._lock:  # one lookup (and rotation) at a time
            held = self._held.get(team_id)
            if held is None or _expiring(held.expires_at):
                held = self._held[team_id] = await self._look_up(team_id)
            return held.client

    def refused(self, team_id: str, client: AsyncWebClient, error: str | None) -> None:
        """Slack answered `error` to a call `client` made in the team: when it says the token is
        no good (`REVOKED`), the client is dropped and the token not used again."""
        if self._one is not None or error not in REVOKED:
            return
        held = self._held.get(team_id)
        if held is not None and held.client is client:
            del self._held[team_id]
        if client.token:
            self._refused.add(client.token)

    async def _look_up(self, team_id: str) -> _Held:
        assert self._installations is not None and self._rotator is not None
        bot = await self._installations.async_find_bot(enterprise_id=None, team_id=team_id)
        if bot is None or not bot.bot_token or bot.bot_token in self._refused:
            raise NotInstalled(f"the app is not installed in workspace {team_id}")
        if bot.bot_refresh_token is not None:
            try:
                rotated = await self._rotator.perform_bot_token_rotation(
                    bot=bot, minutes_before_expiration=ROTATE_BEFORE // 60
                )
            except SlackTokenRotationError as error:
                raise NotInstalled(
                    f"the bot token of workspace {team_id} could not be rotated: {error}"
                ) from None
            if rotated is not None:
                await self._installations.async_save_bot(rotated)
                bot = rotated
        client = web_client(bot.bot_token, self._api_url, self._session)
        return _Held(client, bot.bot_token_expires_at)


def _expiring(expires_at: int | None) -> bool:
    return expires_at is not None and expires_at - ROTATE_BEFORE <= time.time()


@contextlib.contextmanager
def no_slack_environment() -> Iterator[None]:
    """`SLACK_*` hidden from the environment while bolt's and the SDK's objects are built: they
    fall back on those variables for whatever they are not given."""
    hidden = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("SLACK_")}
    try:
        yield
    finally:
        os.environ.update(hidden)
