"""`rolecall slack manifest ROLE --email-link`: the app also asks for `users:read.email`, which
linking people by verified email needs, and says so in the header; without the flag it does not
(the reviewed manifest, `test_cli_slack_manifest.py`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from channels.slack.manifest import app_manifest
from core.model.roles import Role, load_roles
from tests.cli.conftest import REPO, Result, clean_env
from tests.cli.test_cli_slack_manifest import BASE, SCOPES, reviewed


@pytest.fixture(scope="module")
def concierge() -> Role:
    return load_roles(REPO / "manifests" / "roles")["concierge"]


def _with_email_scope(manifest: dict[str, Any]) -> dict[str, Any]:
    oauth = manifest["oauth_config"] | {"scopes": {"bot": [*SCOPES, "users:read.email"]}}
    return manifest | {"oauth_config": oauth}


def test_email_link_adds_only_the_email_scope(concierge: Role) -> None:
    assert app_manifest(concierge, base_url=BASE, email_link=True) == _with_email_scope(reviewed())
    assert app_manifest(concierge, base_url=BASE) == reviewed()
    socket = app_manifest(concierge, mode="socket", email_link=True)
    assert socket["oauth_config"]["scopes"]["bot"][-1] == "users:read.email"


def test_the_command_with_email_link(tmp_path: Path, rolecall: Callable[..., Result]) -> None:
    out = tmp_path / "concierge.yaml"
    done = rolecall(
        "slack", "manifest", "concierge", "--email-link", "--out", str(out), env=clean_env()
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert f"#   rolecall slack manifest concierge --url {BASE} --email-link\n" in text
    assert yaml.safe_load(text) == _with_email_scope(reviewed())
