"""`rolecall slack manifest ROLE --agent-view`, the bot user's name, and the note about a base URL
Slack cannot reach.

Slack's agent view (`features.assistant_view`, "Agents & AI Apps") may need a paid plan, so the
manifest leaves it out unless asked: then it adds the view, the `assistant:write` scope Slack
grants only with it, and the two events the view sends. The bot user's name is what Slack allows
there (lower-case ASCII letters, digits, `.`, `_`, `-`, at most 80), made from the display name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from channels.slack.manifest import BOT_NAME_LIMIT, app_manifest, bot_name, reachable_by_slack
from core.model.roles import Role, load_roles
from tests.cli.conftest import REPO, Result, clean_env
from tests.cli.test_cli_slack_manifest import BASE, EVENTS, SCOPES, reviewed

AGENT_VIEW_EVENTS = ["assistant_thread_started", "assistant_thread_context_changed"]
SLACK_BOT_NAME = re.compile(r"[a-z0-9._-]{1,80}")


@pytest.fixture(scope="module")
def concierge() -> Role:
    return load_roles(REPO / "manifests" / "roles")["concierge"]


def helper(display_name: str) -> Role:
    return Role.model_validate(
        {
            "name": "helper.desk",
            "display_name": display_name,
            "runtime": {"kind": "builtin", "agent": "echo"},
        }
    )


def _with_agent_view(manifest: dict[str, Any], description: str) -> dict[str, Any]:
    features = manifest["features"] | {"assistant_view": {"assistant_description": description}}
    oauth = manifest["oauth_config"] | {"scopes": {"bot": [*SCOPES, "assistant:write"]}}
    events = manifest["settings"]["event_subscriptions"]
    events = events | {"bot_events": [*EVENTS, *AGENT_VIEW_EVENTS]}
    settings = manifest["settings"] | {"event_subscriptions": events}
    return manifest | {"features": features, "oauth_config": oauth, "settings": settings}


def test_the_agent_view_is_off_unless_asked_and_then_brings_its_scope_and_events(
    concierge: Role,
) -> None:
    """Without the flag: no `assistant_view`, no `assistant:write`, only the DM events. With it:
    exactly those three additions, and nothing else changes."""
    plain = app_manifest(concierge, base_url=BASE)
    assert "assistant_view" not in plain["features"]
    assert "assistant:write" not in plain["oauth_config"]["scopes"]["bot"]
    assert plain["settings"]["event_subscriptions"]["bot_events"] == EVENTS

    viewed = app_manifest(concierge, base_url=BASE, agent_view=True)
    assert viewed == _with_agent_view(reviewed(), concierge.description)

    both = app_manifest(concierge, mode="socket", email_link=True, agent_view=True)
    assert both["oauth_config"]["scopes"]["bot"] == [
        *SCOPES,
        "assistant:write",
        "users:read.email",
    ]
    assert both["settings"]["event_subscriptions"] == {"bot_events": [*EVENTS, *AGENT_VIEW_EVENTS]}


def test_the_command_with_agent_view_records_the_flag(
    tmp_path: Path, rolecall: Callable[..., Result]
) -> None:
    """`--agent-view` is in the command the file's header records, and the file has the view."""
    out = tmp_path / "concierge.yaml"
    url = "https://rolecall.example.com"
    done = rolecall(
        "slack",
        "manifest",
        "concierge",
        "--agent-view",
        "--url",
        url,
        "--out",
        str(out),
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    text = out.read_text()
    assert f"#   rolecall slack manifest concierge --url {url} --agent-view\n" in text
    assert f"# Slack posts the app's events to {url}/slack/concierge/events,\n" in text
    assert f"# and clicks on its buttons to {url}/slack/concierge/interactivity.\n" in text
    written = yaml.safe_load(text)
    assert written["features"]["assistant_view"]["assistant_description"]
    assert written["settings"]["event_subscriptions"]["bot_events"] == [
        *EVENTS,
        *AGENT_VIEW_EVENTS,
    ]


@pytest.mark.parametrize(
    ("display_name", "expected"),
    [
        ("Concierge", "concierge"),
        ("Front Desk ☕ Concierge", "front-desk-concierge"),
        ("Ägent Müller", "agent-muller"),
        ("Ops: on-call_2.0", "ops-on-call_2.0"),
        ("日本語のアシスタント", "helper.desk"),  # nothing Slack allows is left: the role's name
        ("  ...Dots...  ", "dots"),
        ("word " * 30, ("word-" * 16)[:-1]),  # cut at a '-', within 80
    ],
)
def test_the_bot_name_is_one_slack_accepts(display_name: str, expected: str) -> None:
    name = bot_name(helper(display_name))
    assert name == expected
    assert SLACK_BOT_NAME.fullmatch(name)
    assert app_manifest(helper(display_name), base_url=BASE)["features"]["bot_user"] == {
        "display_name": expected,
        "always_online": True,
    }


@given(st.text(min_size=1, max_size=200).filter(lambda text: text.strip() != ""))
def test_every_display_name_gives_a_bot_name_slack_accepts(display_name: str) -> None:
    """Whatever the display name, the bot user's name is 1-80 of Slack's allowed characters."""
    name = bot_name(helper(display_name[:200]))
    assert SLACK_BOT_NAME.fullmatch(name), name
    assert len(name) <= BOT_NAME_LIMIT


@pytest.mark.parametrize(
    ("url", "reachable"),
    [
        ("https://rolecall.example.com", True),
        ("https://random-words.trycloudflare.com/gw", True),
        ("https://203.0.113.9", False),  # TEST-NET-3: documentation, not global
        ("https://8.8.8.8", True),
        ("http://rolecall.example.com", False),
        ("http://127.0.0.1:8080", False),
        ("https://127.0.0.1:8443", False),
        ("https://localhost:8443", False),
        ("https://10.0.0.5", False),
        ("https://[::1]:8443", False),
        ("https://gateway.local", False),
        ("https://intranet", False),
    ],
)
def test_a_base_url_slack_can_reach_is_public_https(url: str, reachable: bool) -> None:
    assert reachable_by_slack(url) is reachable


def test_without_a_public_https_url_the_terminal_says_so(
    tmp_path: Path, rolecall: Callable[..., Result]
) -> None:
    """An HTTP mode manifest for `http://gateway.internal:8080` is written (exit 0), and stderr
    says in one line that Slack cannot reach it and what to give instead; the file's header
    says so too."""
    out = tmp_path / "concierge.yaml"
    url = "http://gateway.internal:8080"
    done = rolecall(
        "slack", "manifest", "concierge", "--url", url, "--out", str(out), env=clean_env()
    )
    assert done.returncode == 0, done.stderr
    [note] = done.stderr.splitlines()
    assert note.startswith(f"rolecall: note: Slack cannot reach {url} (")
    assert "--url or ROLECALL_PUBLIC_URL" in note
    assert "# Slack cannot reach that address (it needs a public https:// URL)" in out.read_text()
