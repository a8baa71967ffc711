"""`rolecall doctor`: check what `rolecall serve` would need, one line a check, without serving.

    rolecall doctor [--json] [--offline]

It reads the settings and the role manifests as `serve` does, then checks, in order: the
settings; the role manifests; the database (reachable; migrated to the newest schema, or `serve`
will do it); each role's agent (an ACP agent is started in a scratch directory and answers
`initialize`, an OpenAI-compatible endpoint lists its models with the role's among them, an A2A
agent's card loads; a built-in agent is always there); each role's Slack app (`auth.test` with
its bot token; an app installed over OAuth has its credentials set); the widget's sites and
their page origins; and the public URL (Slack and sites on other machines need one they can
reach). `--offline` skips what reaches out of this machine (agents over the network, Slack).

Each line is `ok`, `warn` (works, but probably not as meant) or `FAIL`, with what to do about
it; the exit status is 1 when any check failed, 0 otherwise (warnings included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from gateway.cli._shared import EXIT_FAILURE, json_option

if TYPE_CHECKING:
    from core.model.roles import Role
    from gateway.settings import Settings

PROBE_TIMEOUT = 30.0
"""Seconds one agent or Slack check may take."""


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"


@dataclass(frozen=True, slots=True)
class Check:
    status: Status
    what: str
    said: str
    fix: str = ""

    def line(self) -> str:
        fix = f" — {self.fix}" if self.fix else ""
        return f"{self.status.value:<4}  {self.what}: {self.said}{fix}"


def add_commands(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check the settings, database, agents, Slack apps and widget sites",
        description="Check what `rolecall serve` needs, one line a check, with what to do "
        "about each failure; exits 1 when any check failed.",
        parents=[json_option()],
    )
    doctor.add_argument(
        "--offline",
        action="store_true",
        help="skip the checks that reach out of this machine (remote agents, Slack)",
    )
    doctor.set_defaults(command=doctor_command)


def doctor_command(args: argparse.Namespace) -> int:
    checks = asyncio.run(examine(offline=args.offline))
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=2, ensure_ascii=False))
    else:
        for check in checks:
            print(check.line())
    return EXIT_FAILURE if any(c.status is Status.FAIL for c in checks) else 0


async def examine(*, offline: bool = False) -> list[Check]:
    """Every check, in order; those that need what an earlier one failed to give are left out."""
    from gateway.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as error:
        return [Check(Status.FAIL, "settings", str(error), "fix the setting it names")]
    checks = [Check(Status.OK, "settings", "read")]
    roles = _roles(settings, checks)
    checks.append(await _database(settings))
    if roles is not None:
        checks += await _agents(settings, roles, offline=offline)
        checks += await _slack(settings, roles, offline=offline)
    checks += _sites(settings)
    checks.append(_public_url(settings, roles or {}))
    return checks


def _roles(settings: Settings, checks: list[Check]) -> dict[str, Role] | None:
    from core.model.roles import ManifestError
    from gateway.roles import configured_roles

    try:
        roles = configured_roles(settings)
    except ManifestError as error:
        checks.append(Check(Status.FAIL, "roles", str(error), "fix the file and field it names"))
        return None
    if not roles:
        checks.append(
            Check(
                Status.FAIL,
                "roles",
                f"no role manifests in {settings.roles_dir}",
                "add one (<name>.yaml, docs/runs.md) or set ROLECALL_ROLES_DIR",
            )
        )
        return roles
    checks.append(Check(Status.OK, "roles", ", ".join(f"role:{name}" for name in sorted(roles))))
    return roles


async def _database(settings: Settings) -> Check:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    url = settings.database
    where = make_url(url).render_as_string(hide_password=True)
    try:
        current, head = await _schema(url)
    except (OSError, SQLAlchemyError) as error:
        cause = getattr(error, "orig", None) or error
        said = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        return Check(
            Status.FAIL,
            "database",
            f"{where}: {said}",
            "check ROLECALL_DATABASE_URL, and that the database server runs and lets you in",
        )
    if current == head:
        return Check(Status.OK, "database", f"{where}, at schema {head}")
    if current is None:
        return Check(
            Status.WARN,
            "database",
            f"{where} has no schema yet",
            "`rolecall serve` creates it at start (or run `rolecall db upgrade`)",
        )
    return Check(
        Status.WARN,
        "database",
        f"{where} is at schema {current}; this version's is {head}",
        "`rolecall serve` upgrades it at start (or run `rolecall db upgrade`)",
    )


async def _schema(url: str) -> tuple[str | None, str]:
    """The database's schema revision (None: none yet) and the newest this version knows. A
    SQLite file that does not exist is not made: it has no schema."""
    from pathlib import Path

    from sqlalchemy.engine import make_url

    from core.storage.migrate import current_revision, newest_revision

    parsed = make_url(url)
    file = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if file and not await asyncio.to_thread(Path(file).exists):
        return None, newest_revision()
    return await current_revision(url), newest_revision()


async def _agents(settings: Settings, roles: dict[str, Role], *, offline: bool) -> list[Check]:
    from core.engine.runtimes.base import AgentError
    from core.engine.runtimes.registry import Runtimes
    from gateway.runtimes import runtime_kinds
    from gateway.settings import named_secrets

    secrets = named_secrets({name for role in roles.values() for name in role.setting_names})
    named = {role.runtime.kind for role in roles.values()}
    runtimes = Runtimes(kinds=runtime_kinds(settings, secrets, named=named))
    checks = []
    for name, role in sorted(roles.items()):
        what = f"role:{name} agent ({role.runtime.kind})"
        manifest = settings.roles_dir / f"{name}.yaml"
        if problem := runtimes.problem(role):
            field, said = problem
            if said.endswith("is not set"):
                fix = "set it in the gateway's environment (its value is the secret)"
            elif field == "runtime.command":
                fix = f"install it (docs/runtimes.md), or give its path in {manifest}: {field}"
            else:
                fix = f"fix {manifest}: {field}"
            checks.append(Check(Status.FAIL, what, said, fix))
            continue
        if offline and role.runtime.kind in ("openai", "a2a"):
            checks.append(Check(Status.OK, what, "not reached (--offline)"))
            continue
        fix = _AGENT_FIX.get(role.runtime.kind, "").format(manifest=manifest)
        checks.append(await _probe(what, runtimes.probe(role), AgentError, fix))
    return checks


_AGENT_FIX = {
    "acp": "run its command by hand to see why; docs/runtimes.md has each agent's setup",
    "openai": "start the server, or fix runtime.base_url / runtime.model in {manifest}",
    "a2a": "check that the agent runs and runtime.card_url in {manifest} is its card's full URL",
}


async def _probe(what: str, reach: Awaitable[str], expected: type[Exception], fix: str) -> Check:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            said = await reach
    except TimeoutError:
        return Check(Status.FAIL, what, f"no answer in {PROBE_TIMEOUT:g} s", fix)
    except expected as error:
        return Check(Status.FAIL, what, str(error), fix)
    return Check(Status.OK, what, said)


async def _slack(settings: Settings, roles: dict[str, Role], *, offline: bool) -> list[Check]:
    from gateway.settings import named_secrets

    checks = []
    for name, role in sorted(roles.items()):
        slack = role.slack
        if slack is None:
            continue
        what = f"role:{name} Slack app"
        names = set(slack.setting_names)
        secrets = named_secrets(names)
        if missing := sorted(names - set(secrets)):
            checks.append(
                Check(
                    Status.FAIL,
                    what,
                    f"the setting {missing[0]} is not set",
                    "set it to the app's secret from api.slack.com/apps",
                )
            )
            continue
        if slack.bot_token is None:
            checks.append(Check(Status.OK, what, "installed over OAuth; credentials set"))
            continue
        if offline:
            checks.append(Check(Status.OK, what, "bot token set; not reached (--offline)"))
            continue
        token = secrets[slack.bot_token]
        checks.append(
            await _probe(
                what,
                _auth_test(token, settings.slack_api_url),
                _SlackRefused,
                f"check {slack.bot_token}: the app's Bot User OAuth Token (xoxb-…)",
            )
        )
    return checks


class _SlackRefused(Exception):
    pass


async def _auth_test(token: str, api_url: str) -> str:
    import aiohttp
    from slack_sdk.errors import SlackApiError

    from channels.slack.apps import web_client

    try:
        async with aiohttp.ClientSession() as http:
            answer = await web_client(token, api_url, http).auth_test()
    except SlackApiError as error:
        raise _SlackRefused(f"auth.test answered {error.response.get('error')!r}") from None
    except (aiohttp.ClientError, OSError) as error:
        raise _SlackRefused(f"Slack's Web API at {api_url} did not answer: {error}") from None
    return f"auth.test: the bot {answer.get('user')!r} in the workspace {answer.get('team')!r}"


def _sites(settings: Settings) -> list[Check]:
    if not settings.sites:
        return [
            Check(
                Status.OK,
                "widget",
                f"the demo page only ({settings.base_url}/)",
                "to embed it on your own pages, add a site to ROLECALL_SITES (docs/widget.md)",
            )
        ]
    checks = []
    for name, site in sorted(settings.sites.items()):
        what = f"widget site {name}"
        if not site.origins:
            checks.append(
                Check(
                    Status.WARN,
                    what,
                    "no page origin may use it",
                    "list the origins of the pages that embed it (ROLECALL_SITES, `origins`)",
                )
            )
            continue
        plain = [o for o in site.origins if o.startswith("http://") and not _local(o)]
        signed = "signed user tokens" if site.secret is not None else "anonymous visitors only"
        if plain:
            checks.append(
                Check(
                    Status.WARN,
                    what,
                    f"{plain[0]} is not https",
                    "visitors' messages and tokens would cross the network in the clear",
                )
            )
            continue
        checks.append(Check(Status.OK, what, f"{', '.join(site.origins)} ({signed})"))
    return checks


def _local(origin: str) -> bool:
    host = origin.split("://", 1)[1].split(":", 1)[0]
    return host in ("localhost", "127.0.0.1", "[::1]")


def _public_url(settings: Settings, roles: dict[str, Role]) -> Check:
    url = settings.base_url
    from channels.slack.manifest import reachable_by_slack

    http_slack = sorted(n for n, r in roles.items() if r.slack and r.slack.mode == "http")
    if http_slack and not reachable_by_slack(url):
        return Check(
            Status.FAIL,
            "public URL",
            f"{url} — Slack sends role:{http_slack[0]}'s events to an https URL it can reach",
            "set ROLECALL_PUBLIC_URL to the https address in front of the gateway",
        )
    if not settings.public_url:
        remote = any(not _local(o) for site in settings.sites.values() for o in site.origins)
        if remote:
            return Check(
                Status.WARN,
                "public URL",
                f"not set; pages elsewhere would load the widget from {url}",
                "set ROLECALL_PUBLIC_URL to the address visitors' browsers reach",
            )
        return Check(Status.OK, "public URL", f"{url} (this machine only; ROLECALL_PUBLIC_URL)")
    return Check(Status.OK, "public URL", url)
