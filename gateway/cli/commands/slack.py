"""`rolecall slack manifest ROLE`: write the Slack app manifest of a role, to create its Slack app
from (docs/slack.md).

    rolecall slack manifest ROLE [--out PATH] [--url BASE_URL] [--mode http|socket]
                                 [--email-link] [--agent-view]

The role is read from the roles directory as `serve` would read it. Options are checked before
anything is written; the file records the command that made it, so that it can be made again.
It says in one line where it wrote the file; in HTTP mode, when the base URL is not one Slack can
reach (https, public), a second line on stderr says so and how to give one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli._shared import EXIT_USAGE, Failure, command_group, read_settings

if TYPE_CHECKING:
    from core.model.roles import Role
    from gateway.settings import Settings


def add_commands(commands: Any) -> None:
    slack = command_group(
        commands,
        "slack",
        "the Slack channel: app manifests of roles",
        "Work with the Slack apps of roles (docs/slack.md).",
    )
    help_text = "write the Slack app manifest of a role, to create its Slack app from"
    sub = slack.add_parser("manifest", help=help_text, description=help_text)
    sub.add_argument("role", metavar="ROLE", help="the role's name (or role:<name>)")
    sub.add_argument(
        "--out",
        type=Path,
        metavar="PATH",
        help="where to write it (default: manifests/slack/ROLE.yaml)",
    )
    sub.add_argument(
        "--url",
        metavar="BASE_URL",
        help="the gateway's public base URL, as Slack reaches it (default: ROLECALL_PUBLIC_URL, "
        "else http://ROLECALL_HOST:ROLECALL_PORT); HTTP mode only",
    )
    sub.add_argument(
        "--mode",
        choices=("http", "socket"),
        help="how Slack reaches the gateway (default: the role's slack.mode, else http)",
    )
    sub.add_argument(
        "--email-link",
        action="store_true",
        help="also ask for users:read.email, to link people by their verified email in the "
        "workspaces ROLECALL_SLACK_EMAIL_LINK_TEAMS allows",
    )
    sub.add_argument(
        "--agent-view",
        action="store_true",
        help="also turn on Slack's agent view (Agents & AI Apps; may need a paid plan): the "
        "app then shows '<role> is working…' while a turn runs, and hears the view's events",
    )
    sub.set_defaults(command=slack_manifest_command)


def slack_manifest_command(args: argparse.Namespace) -> int:
    from channels.slack import manifest

    base_url = None
    if args.url is not None:
        try:
            base_url = manifest.check_base_url(args.url)
        except manifest.ManifestOptionError as exc:
            raise Failure(f"--url: {exc}", EXIT_USAGE) from None
    settings = read_settings()
    name = args.role.removeprefix("role:")
    role = _configured_role(settings, name)
    try:
        mode = manifest.app_mode(role, args.mode)
    except manifest.ManifestOptionError as exc:
        raise Failure(f"--mode: {exc}", EXIT_USAGE) from None
    if mode == "socket" and base_url is not None:
        raise Failure("--url: a Socket Mode app has no request URL; leave --url out", EXIT_USAGE)
    if mode == "http" and base_url is None:
        base_url = settings.base_url
    command = f"rolecall slack manifest {name}"
    command += f" --url {base_url}" if base_url is not None else ""
    command += f" --mode {args.mode}" if args.mode is not None and role.slack is None else ""
    command += " --email-link" if args.email_link else ""
    command += " --agent-view" if args.agent_view else ""
    app = manifest.app_manifest(
        role,
        mode=mode,
        base_url=base_url,
        email_link=args.email_link,
        agent_view=args.agent_view,
    )
    out: Path = args.out or Path("manifests/slack") / f"{name}.yaml"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(manifest.render(role, app, command=command), encoding="utf-8")
    except OSError as exc:
        raise Failure(f"cannot write {out}: {exc.strerror or exc}") from None
    events = app["settings"]["event_subscriptions"]
    where = f"events at {events['request_url']}" if base_url is not None else "Socket Mode"
    print(f"wrote the Slack app manifest of role:{name} to {out} ({where})")
    if base_url is not None and not manifest.reachable_by_slack(base_url):
        print(
            f"rolecall: note: Slack cannot reach {base_url} (it posts events only to a public "
            "https:// URL): give the gateway's public URL as --url or ROLECALL_PUBLIC_URL "
            "(a tunnel gives one; docs/slack.md)",
            file=sys.stderr,
        )
    return 0


def _configured_role(settings: Settings, name: str) -> Role:
    """The role `name` from the roles directory, as `serve` would read it."""
    from core.model.roles import ManifestError
    from gateway.roles import configured_roles

    try:
        roles = configured_roles(settings)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    role = roles.get(name)
    if role is None:
        known = ", ".join(sorted(roles)) or "none"
        raise Failure(f"no role named {name!r} in {settings.roles_dir} (roles there: {known})")
    return role
