"""Installing a role's Slack app in any number of workspaces over OAuth.

    GET /slack/{role}/install         302 to Slack's authorize page, with a fresh `state` (kept in
                                      the database, and in a cookie of this browser)
    GET /slack/{role}/oauth_redirect  Slack sends the browser back with `code` and `state`: the
                                      state is consumed (once, from the browser it was given
                                      to, within `STATE_SECONDS`), the code is exchanged for the
                                      workspace's bot token (`oauth.v2.access`), the installation
                                      is stored, and a page says so — or says why not

Bolt's `AsyncOAuthFlow` does the work; this module configures it. Installations are rows of
slack_sdk's SQLAlchemy installation store and states rows of its OAuth state store, in the
gateway's database. Their tables are created by migration 0011, never by the SDK. Rows are per
app (`client_id`), so one role's app never sees another's installations; a state is bound to its
role by the cookie's name. The flow's Web API calls go to `ROLECALL_SLACK_API_URL`; the
authorize page people are sent to is Slack's own.
"""

from __future__ import annotations

import logging

from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy.ext.asyncio import AsyncEngine

from channels.slack.apps import ROTATE_BEFORE, SlackCredentials, no_slack_environment
from channels.slack.manifest import SCOPES, oauth_redirect_url
from core.model.roles import Role
from core.storage import schema
from core.storage.engine import create_engine

log = logging.getLogger("rolecall.slack.oauth")

STATE_SECONDS = 600
"""How long an install may take from the install page to the redirect back."""


def install_path(role: Role) -> str:
    return f"/slack/{role.name}/install"


def redirect_path(role: Role) -> str:
    return f"/slack/{role.name}/oauth_redirect"


def open_engine(database_url: str) -> AsyncEngine:
    """The stores' engine on the gateway's database. On SQLite its transactions take the write
    lock up front: the stores read, then write, in one transaction (a state consumed, an
    installation saved), which a deferred transaction could not always upgrade."""
    return create_engine(database_url, pool_size=2, writer=True)


def oauth_flow(
    role: Role,
    creds: SlackCredentials,
    *,
    engine: AsyncEngine,
    client: AsyncWebClient,
    base_url: str,
) -> AsyncOAuthFlow:
    """The role's install flow, its stores on `engine` (tables from the migrations), its Web API
    calls made by `client` (no token; Slack's API, or the fake the tests point it at)."""
    assert creds.client_id is not None and creds.client_secret is not None
    installations = AsyncSQLAlchemyInstallationStore(
        client_id=creds.client_id,
        engine=engine,
        bots_table_name=schema.slack_bots.name,
        installations_table_name=schema.slack_installations.name,
        logger=log,
    )
    states = AsyncSQLAlchemyOAuthStateStore(
        expiration_seconds=STATE_SECONDS,
        engine=engine,
        logger=log,
        table_name=schema.slack_oauth_states.name,
    )
    with no_slack_environment():  # the settings fall back on SLACK_* for what is not given
        settings = AsyncOAuthSettings(
            client_id=creds.client_id,
            client_secret=creds.client_secret,
            scopes=[name for name, _ in SCOPES],
            user_scopes=[],
            redirect_uri=oauth_redirect_url(base_url, role.name),
            install_path=install_path(role),
            install_page_rendering_enabled=False,  # straight on to Slack
            redirect_uri_path=redirect_path(role),
            installation_store=installations,
            installation_store_bot_only=True,
            token_rotation_expiration_minutes=ROTATE_BEFORE // 60,
            state_store=states,
            state_cookie_name=f"rolecall-slack-{role.name}-oauth-state",
            state_expiration_seconds=STATE_SECONDS,
            logger=log,
        )
    return AsyncOAuthFlow(client=client, logger=log, settings=settings)


def token_rotator(creds: SlackCredentials, client: AsyncWebClient) -> AsyncTokenRotator:
    """Refreshes a workspace's bot token (apps with token rotation), by `client`."""
    assert creds.client_id is not None and creds.client_secret is not None
    return AsyncTokenRotator(
        client_id=creds.client_id, client_secret=creds.client_secret, client=client
    )
