"""`rolecall role …`: the roles a running gateway serves, as their manifests define them.

    rolecall role list
    rolecall role show NAME

`list` gives each role's name, display name and the runtime behind it (a built-in agent, an ACP
command, an OpenAI-compatible model, a remote A2A agent); `show` one role's settings, its Slack
app (the names of the settings holding its secrets, never the secrets) and its instructions.
Read from `GET /api/v1/roles` (docs/api.md); an unknown name is `role_not_found`.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

from gateway.cli._shared import (
    command_group,
    gateway_client,
    gateway_command,
    one_line,
    output,
    print_json,
    table,
)
from gateway.cli.client import JSON

SHOWN = ("name", "display_name", "description", "runtime", "slack", "instructions")
"""Fields `show` prints on lines of their own; every other field of the manifest is a setting."""


def add_commands(commands: Any) -> None:
    role = command_group(
        commands,
        "role",
        "the roles a running gateway serves",
        "Read the roles a running gateway serves through its HTTP API.",
    )

    add = partial(gateway_command, role)

    add("list", role_list_command, "the roles served, by name, with their runtimes")

    sub = add("show", role_show_command, "one role: runtime, limits, Slack app, instructions")
    sub.add_argument("name", metavar="NAME", help="the role's name (or role:<name>)")


# -- the commands ----------------------------------------------------------------------------------


def role_list_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).list_roles()
    if args.json:
        print_json(answer)
        return 0
    roles = answer.get("roles", [])
    if not roles:
        print("(no roles: add manifests to ROLECALL_ROLES_DIR and restart the gateway)")
        return 0
    rows = [
        [
            str(r.get("name", "")),
            one_line(str(r.get("display_name", ""))),
            runtime_text(r.get("runtime") or {}),
            "yes" if r.get("slack") else "-",
        ]
        for r in roles
    ]
    print(table([["ROLE", "DISPLAY_NAME", "RUNTIME", "SLACK"], *rows]))
    return 0


def role_show_command(args: argparse.Namespace) -> int:
    return output(args, gateway_client(args).get_role(args.name), _print_role)


# -- output ----------------------------------------------------------------------------------------


def runtime_text(runtime: JSON) -> str:
    """The runtime in a few words: its kind and what it runs."""
    kind = str(runtime.get("kind", "?"))
    if kind == "builtin":
        return f"builtin {runtime.get('agent')}"
    if kind == "acp":
        return " ".join(["acp", str(runtime.get("command")), *map(str, runtime.get("args") or [])])
    if kind == "openai":
        return f"openai {runtime.get('model')} at {runtime.get('base_url')}"
    if kind == "a2a":
        return f"a2a {runtime.get('card_url')}"
    return kind


def _print_role(role: JSON) -> None:
    fields = [
        ["role", str(role.get("address") or f"role:{role.get('name')}")],
        ["display_name", one_line(str(role.get("display_name", "")))],
        ["description", one_line(str(role.get("description") or "-"))],
        ["runtime", runtime_text(role.get("runtime") or {})],
    ]
    fields += [[name, _setting(value)] for name, value in role.items() if name not in SHOWN]
    fields.append(["slack", _slack(role.get("slack"))])
    print(table([row for row in fields if row[0] != "address"]))
    instructions = str(role.get("instructions") or "").strip()
    if instructions:
        print()
        print(instructions)


def _setting(value: object) -> str:
    if isinstance(value, str):
        return one_line(value)
    return json.dumps(value, ensure_ascii=False)


def _slack(slack: object) -> str:
    if not isinstance(slack, dict):
        return "-"
    named = ", ".join(f"{k}={v}" for k, v in slack.items() if v is not None and k != "mode")
    return f"{slack.get('mode', 'http')} mode ({named})" if named else str(slack.get("mode"))
