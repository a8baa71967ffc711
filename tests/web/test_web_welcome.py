"""What a first-time visitor sees of the role before anyone speaks: the manifest's `widget:`
section (greeting, up to three suggested prompts, an avatar image or initials) comes with the
widget's session, and a bad value stops the manifest naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from core.model.roles import ManifestError, Role
from core.model.roles.manifests import load_role
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN
from tests.serving import free_port, serve
from tests.web.conftest import Widget, web_settings

REPO = Path(__file__).resolve().parents[2]

HOST = Role.model_validate(
    {
        "name": "host",
        "display_name": "Front Desk",
        "runtime": {"kind": "builtin", "agent": "echo"},
        "widget": {
            "greeting": "Hello! I'm **the front desk**.",
            "suggestions": ["Opening hours?", "  Where do I park?  "],
            "avatar": "https://cdn.example.com/desk.png",
        },
    }
)
INITIALS = Role.model_validate(
    {
        "name": "initials",
        "display_name": "Night Porter",
        "runtime": {"kind": "builtin", "agent": "echo"},
        "widget": {"avatar": "NP!"},
    }
)


async def test_the_session_brings_the_roles_greeting_suggestions_and_avatar(
    tmp_path: Path,
) -> None:
    """The session answer carries the role as the widget presents it; a role without a
    `widget:` section has no greeting, no suggestions, and its display name's initials."""
    port = free_port()
    roles = {"echo": ECHO, "host": HOST, "initials": INITIALS}
    app = build_app(web_settings(tmp_path, port), api_token=TOKEN, roles=roles)
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        host = (await Widget(server, http, None).start("host"))["role"]
        assert host == {
            "name": "host",
            "display_name": "Front Desk",
            "greeting": "Hello! I'm **the front desk**.",
            "suggestions": ["Opening hours?", "Where do I park?"],
            "avatar_url": "https://cdn.example.com/desk.png",
            "initials": "FD",
        }
        plain = (await Widget(server, http, None).start("echo"))["role"]
        assert plain["greeting"] is None and plain["suggestions"] == []
        assert plain["avatar_url"] is None and plain["initials"] == "E"
        named = (await Widget(server, http, None).start("initials"))["role"]
        assert named["avatar_url"] is None and named["initials"] == "NP!"


def test_the_demo_role_greets_with_three_suggestions() -> None:
    """The shipped concierge manifest has a greeting and three suggested prompts."""
    concierge = load_role(REPO / "manifests" / "roles" / "concierge.yaml")
    assert concierge.widget.greeting and "concierge" in concierge.widget.greeting
    assert len(concierge.widget.suggestions) == 3
    assert concierge.initials == "C"


BASE = """name: greeter
display_name: Greeter
runtime:
  kind: builtin
  agent: echo
widget:
"""


@pytest.mark.parametrize(
    ("section", "field", "reason"),
    [
        ("  suggestions: [a, b, c, d]\n", "widget.suggestions", "at most 3"),
        ("  suggestions: [a, '   ']\n", "widget.suggestions.1", "blank"),
        ("  suggestions: [same, same]\n", "widget.suggestions", "differ"),
        ("  suggestions: ['" + "x" * 201 + "']\n", "widget.suggestions.0", "at most 200"),
        ("  greeting: '  '\n", "widget.greeting", "blank"),
        ("  avatar: not an image\n", "widget.avatar", "image URL, or initials"),
        ("  avatar: 'https://'\n", "widget.avatar", "with a host"),
        ("  avatar: 'javascript:alert(1)'\n", "widget.avatar", "image URL, or initials"),
        ("  greting: hello\n", "widget.greting", "Extra inputs are not permitted"),
    ],
)
def test_a_bad_widget_section_names_the_file_and_the_field(
    tmp_path: Path, section: str, field: str, reason: str
) -> None:
    """Each refusal is one line: the manifest's path, the field, what is wrong."""
    path = tmp_path / "greeter.yaml"
    path.write_text(BASE + section, encoding="utf-8")
    with pytest.raises(ManifestError) as refused:
        load_role(path)
    message = refused.value.message
    assert message.startswith(f"{path}: {field}: "), message
    assert reason in message, message
