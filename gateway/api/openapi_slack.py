"""The operations of the roles' Slack apps and their workspaces' health (`gateway.api.slack`)
for the OpenAPI document (`gateway.api.openapi`), declared as `openapi_paths` declares the rest
of the operator API; docs/api.md says the same in prose."""

from __future__ import annotations

from typing import Any

from gateway.api.openapi_paths import answer, limit, operation, path, query
from gateway.api.openapi_schemas import (
    INTEGER,
    STRING,
    TIME,
    Schema,
    array,
    described,
    enum,
    nullable,
    obj,
)
from gateway.api.slack import SETTINGS, TEAM_MAX

_COUNT: Schema = {"type": "integer", "minimum": 0}
_SETTING: Schema = {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"}

_APP = obj(
    {
        "role": STRING,
        "display_name": STRING,
        "mode": enum(("http", "socket")),
        "installed": described(
            enum(("oauth", "bot_token")),
            "in many workspaces over OAuth, or in one with the bot token of a setting",
        ),
        "settings": described(
            {
                "type": "object",
                "properties": {name: _SETTING for name in SETTINGS},
                "additionalProperties": False,
            },
            "the NAMES of the settings holding the app's secrets (never their values)",
        ),
        "install_path": described(
            nullable(STRING), "where a workspace's admin begins installing it (OAuth only)"
        ),
        "delivery": obj(
            {
                "cursor": described(nullable(INTEGER), "the event position posted up to"),
                "behind": described(_COUNT, "events past the cursor"),
                "intents": described(_COUNT, "posts meant and not recorded yet"),
            }
        ),
    }
)

_WORKSPACE = obj(
    {
        "team_id": STRING,
        "team_name": described(nullable(STRING), "from its installation (OAuth only)"),
        "installed": described(
            {"type": ["boolean", "null"]},
            "OAuth: whether an installation is kept; null for an app installed with a bot token",
        ),
        "installed_at": nullable(TIME),
        "dms": described(_COUNT, "DMs of the app there bound to a conversation"),
        "last_event_at": described(
            nullable(TIME), "the latest event received from it, or message a person wrote there"
        ),
        "last_post_at": described(nullable(TIME), "when Slack last accepted a post there"),
        "error": described(
            nullable(obj({"code": STRING, "method": STRING, "at": TIME})),
            "the latest refusal of a post, update or deletion there (`token_revoked`, …)",
        ),
        "health": described(
            enum(("ok", "failing", "not_installed", "quiet")),
            "`failing`: no post accepted since the latest refusal; `not_installed`: installed "
            "over OAuth once, no installation kept; `quiet`: nothing heard or posted yet",
        ),
    }
)


def slack_paths() -> dict[str, Any]:
    return {
        "/api/v1/slack": path(
            get=operation(
                "list_slack_apps",
                "The roles' Slack apps: how each is installed, its settings by name, its delivery",
                tag="slack",
                answers={200: answer("the apps, by role name", obj({"apps": array(_APP)}))},
            ),
        ),
        "/api/v1/slack/{role}/workspaces": path(
            {"role": "the role's name"},
            get=operation(
                "list_slack_workspaces",
                "The workspaces of a role's Slack app with their health, in team id order",
                tag="slack",
                parameters=[
                    query(
                        "after",
                        {"type": "string", "minLength": 1, "maxLength": TEAM_MAX},
                        "the page after this team id (the previous page's `next`)",
                    ),
                    limit(),
                ],
                answers={
                    200: answer(
                        "a page",
                        obj(
                            {
                                "role": STRING,
                                "workspaces": array(_WORKSPACE),
                                "next": nullable(STRING),
                            }
                        ),
                    )
                },
                failures={404: "`role_not_found`, `no_slack_app`"},
            ),
        ),
    }
