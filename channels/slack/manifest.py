"""The Slack app manifest of a role: what an operator pastes at api.slack.com/apps ("Create New
App" → "From a manifest") to make the role's Slack app (docs/slack.md).

A pure function of the role and three options, the mode, the gateway's public base URL and
whether people are linked by email:

    mode        the role's `slack.mode` when it has a `slack:` section, else `http`; an explicit
                mode that contradicts the role's is refused (the gateway serves the role's)
    http        Slack posts events to `<base>/slack/<role>/events` and clicks on buttons (an
                approval's, `interactivity`) to `<base>/slack/<role>/interactivity`
                (channels/slack/routes.py)
    socket      no request URL: the gateway connects to Slack (`socket_mode_enabled: true`),
                and both come over that connection

A role installed in many workspaces over OAuth (`slack.client_id`, an HTTP mode app) also gets
its OAuth redirect URL, `<base>/slack/<role>/oauth_redirect` (channels/slack/install.py), and
the two events that say a workspace let the app go (`OAUTH_EVENTS`).

With `email_link` the app also asks for `users:read.email` (`EMAIL_SCOPE`): `users.info` then
gives a person's email and whether Slack confirmed it, which links them to a person with that
email in the workspaces `ROLECALL_SLACK_EMAIL_LINK_TEAMS` allows. Without it, the app never sees
an email.

With `agent_view` the app turns on Slack's agent view (`features.assistant_view`, "Agents & AI
Apps", which may need a paid plan or a developer sandbox), asks for `assistant:write`
(`AGENT_VIEW_SCOPE`: the "working…" status, `assistant.threads.setStatus`), which Slack grants
only to an app with that view, and subscribes to the two events the view sends
(`AGENT_VIEW_EVENTS`). Without it the app is a plain bot that people DM, which every plan has.

It asks for exactly what the adapter in `channels/slack/` uses and nothing more (`SCOPES`,
`EVENTS`, each with the call or event that needs it), so the test compares the manifest with a
reviewed fixture. Names come from the role, shortened to Slack's limits at a word boundary; the
bot user's name is made of what Slack allows there (`bot_name`).
"""

from __future__ import annotations

import re
import unicodedata
import urllib.parse
from ipaddress import ip_address
from typing import Any, Literal

import yaml

from core.model.roles import Role

Mode = Literal["http", "socket"]

SCOPES: tuple[tuple[str, str], ...] = (
    (
        "chat:write",
        "chat.postMessage, chat.update, chat.delete of the bot's own messages; "
        "chat.postEphemeral (why a click was not an answer)",
    ),
    ("im:history", "message.im events; conversations.history of a DM (a post that timed out)"),
    ("mpim:history", "message.mpim events; conversations.history of a group DM"),
    ("mpim:read", "conversations.members of a group DM (who its thread is with)"),
    ("users:read", "users.info: a person's display name on first contact"),
)
"""The bot scopes, and why the adapter needs each (auth.test needs none)."""

AGENT_VIEW_SCOPE: tuple[str, str] = (
    "assistant:write",
    "assistant.threads.setStatus: '<role> is working…' while a turn runs",
)
"""The scope asked for only with the agent view (`app_manifest(agent_view=True)`): Slack grants
it only to an app whose manifest has `features.assistant_view`."""

EMAIL_SCOPE: tuple[str, str] = (
    "users:read.email",
    "users.info with the person's email and is_email_confirmed: linking by verified email",
)
"""The scope asked for only when people are linked by email (`app_manifest(email_link=True)`)."""

EVENTS: tuple[tuple[str, str], ...] = (
    ("message.im", "a person's message, edit or deletion in their DM with the bot"),
    ("message.mpim", "the same in a group DM the bot was added to"),
)
"""The bot events, and what each carries."""

OAUTH_EVENTS: tuple[tuple[str, str], ...] = (
    ("app_uninstalled", "a workspace removed the app: its installation is deleted"),
    ("tokens_revoked", "a workspace revoked the bot's token: its installation is deleted"),
)
"""The bot events of an app installed over OAuth, on top of `EVENTS` (no scope needed)."""

AGENT_VIEW_EVENTS: tuple[tuple[str, str], ...] = (
    ("assistant_thread_started", "a person opened a thread with the app in the agent view"),
    ("assistant_thread_context_changed", "the channel a person looks at beside that thread"),
)
"""The bot events of an app with the agent view, on top of `EVENTS` (no scope needed); the
gateway acknowledges and records them (`channels/slack/inbound.py`), the person's messages in
that thread still come as `message.im`."""

NAME_LIMIT = 35
DESCRIPTION_LIMIT = 140
BOT_NAME_LIMIT = 80
"""Slack's limits on the app's name, its short description and the bot user's name."""

_NOT_IN_BOT_NAME = re.compile(r"[^a-z0-9._-]+")
"""What Slack refuses in the bot user's name: anything but lower-case ASCII letters, digits,
'.', '_' and '-' (docs.slack.dev/reference/app-manifest, `features.bot_user.display_name`)."""


class ManifestOptionError(ValueError):
    """An option does not fit the role (or is not a URL); the message is one line."""


def app_manifest(
    role: Role,
    *,
    mode: Mode | None = None,
    base_url: str | None = None,
    email_link: bool = False,
    agent_view: bool = False,
) -> dict[str, Any]:
    """The role's Slack app manifest as a dict (key order as Slack shows it).

    `base_url` (checked with `check_base_url`) is required in HTTP mode and refused in Socket
    Mode, which has no request URL. `email_link` adds the `users:read.email` scope;
    `agent_view` the agent view, its scope and its events."""
    chosen = app_mode(role, mode)
    description = _one_line(role.description)
    about = {"name": shorten(role.display_name, NAME_LIMIT)}
    if description:
        about["description"] = shorten(description, DESCRIPTION_LIMIT)
    events: dict[str, Any] = {}
    oauth: dict[str, Any] = {}
    interactivity: dict[str, Any] = {"is_enabled": True}
    if chosen == "http":
        if base_url is None:
            raise ManifestOptionError("an HTTP mode app needs the gateway's public base URL")
        events["request_url"] = events_url(check_base_url(base_url), role.name)
        interactivity["request_url"] = interactivity_url(check_base_url(base_url), role.name)
        if installed_over_oauth(role):
            oauth["redirect_urls"] = [oauth_redirect_url(check_base_url(base_url), role.name)]
    elif base_url is not None:
        raise ManifestOptionError(
            "a Socket Mode app has no request URL: the gateway connects to Slack"
        )
    bot_events = EVENTS
    bot_events += OAUTH_EVENTS if installed_over_oauth(role) else ()
    bot_events += AGENT_VIEW_EVENTS if agent_view else ()
    events["bot_events"] = [name for name, _ in bot_events]
    scopes = SCOPES
    scopes += (AGENT_VIEW_SCOPE,) if agent_view else ()
    scopes += (EMAIL_SCOPE,) if email_link else ()
    oauth["scopes"] = {"bot": [name for name, _ in scopes]}
    features: dict[str, Any] = {
        "app_home": {
            "home_tab_enabled": False,
            "messages_tab_enabled": True,
            "messages_tab_read_only_enabled": False,
        },
        "bot_user": {"display_name": bot_name(role), "always_online": True},
    }
    if agent_view:
        features["assistant_view"] = {
            "assistant_description": shorten(
                description or f"Direct messages with {role.display_name}.", DESCRIPTION_LIMIT
            ),
        }
    return {
        "display_information": about,
        "features": features,
        "oauth_config": oauth,
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": chosen == "socket",
            "token_rotation_enabled": False,
        },
    }


def app_mode(role: Role, requested: Mode | None) -> Mode:
    """The mode of the role's app: the role's own when it has a `slack:` section, else the one
    requested, else HTTP."""
    own = role.slack.mode if role.slack is not None else None
    if own is not None and requested is not None and requested != own:
        raise ManifestOptionError(
            f"role {role.name} has slack.mode {own} in its manifest; the gateway serves it that "
            f"way, so a {requested} mode app would never hear from it"
        )
    return own or requested or "http"


def check_base_url(url: str) -> str:
    """The gateway's base URL as Slack reaches it, without a trailing slash; `ManifestOptionError`
    when it is not an absolute http(s) URL without query or fragment."""
    parsed = urllib.parse.urlsplit(url.strip())
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.hostname
        or parsed.query
        or parsed.fragment
        or parsed.username
        or parsed.password
    ):
        raise ManifestOptionError(
            f"the base URL must look like https://rolecall.example.com, not {url!r}"
        )
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path, "", "")).rstrip("/")


def reachable_by_slack(base_url: str) -> bool:
    """Whether Slack can post to `base_url` as far as the URL tells: https, at a name or a public
    address — not loopback, a private or reserved network, `localhost`, a `.local` or
    `.internal` name, or a name without a dot."""
    parsed = urllib.parse.urlsplit(base_url)
    host = (parsed.hostname or "").lower()
    if parsed.scheme != "https" or not host:
        return False
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return False
    try:
        return ip_address(host).is_global
    except ValueError:  # a name, not an address
        return "." in host


def bot_name(role: Role) -> str:
    """The bot user's name, as Slack allows it: the role's display name in lower case, letters
    stripped of accents, every run of other characters one '-', at most `BOT_NAME_LIMIT`
    characters (cut at a '-'); the role's name when nothing of the display name is left."""
    ascii_name = unicodedata.normalize("NFKD", role.display_name).encode("ascii", "ignore")
    name = _NOT_IN_BOT_NAME.sub("-", ascii_name.decode().lower()).strip("-._")
    if len(name) > BOT_NAME_LIMIT:
        cut = name[:BOT_NAME_LIMIT]
        dash = cut.rfind("-")
        name = (cut[:dash] if dash >= BOT_NAME_LIMIT // 2 else cut).rstrip("-._")
    return name or role.name[:BOT_NAME_LIMIT]


def events_url(base_url: str, role_name: str) -> str:
    """Where Slack posts the events of the role's app (`channels/slack/routes.py`)."""
    return f"{base_url}/slack/{role_name}/events"


def interactivity_url(base_url: str, role_name: str) -> str:
    """Where Slack posts clicks on the buttons of the role's app's messages (an approval's)."""
    return f"{base_url}/slack/{role_name}/interactivity"


def oauth_redirect_url(base_url: str, role_name: str) -> str:
    """Where Slack sends the browser back after someone installs the role's app
    (`channels/slack/install.py`)."""
    return f"{base_url}/slack/{role_name}/oauth_redirect"


def installed_over_oauth(role: Role) -> bool:
    return role.slack is not None and role.slack.oauth


def render(role: Role, manifest: dict[str, Any], *, command: str) -> str:
    """The manifest as the YAML file that is shipped, with a header saying how it was made."""
    events = manifest["settings"]["event_subscriptions"]
    if "request_url" in events:
        mode = "HTTP mode"
        url = events["request_url"]
        how = [
            f"Slack posts the app's events to {url},",
            f"and clicks on its buttons to {manifest['settings']['interactivity']['request_url']}.",
        ]
        if not reachable_by_slack(url):
            how += [
                "Slack cannot reach that address (it needs a public https:// URL): generate the",
                "file again with your gateway's public HTTPS base URL as --url.",
            ]
    else:
        mode = "Socket Mode"
        how = ["The gateway connects to Slack with the app-level token: there is no request URL."]
    header = [
        f"The Slack app manifest of role:{role.name} ({mode}), generated by",
        f"  {command}",
        *how,
        "Change the role and generate it again rather than editing this file. Create the app",
        'from it at https://api.slack.com/apps ("From a manifest"): see docs/slack.md.',
    ]
    body = yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=100)
    return "".join(f"# {line}\n" for line in header) + body


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole, or cut at a word boundary with "…"."""
    text = _one_line(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-\u2013\u2014") + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())
