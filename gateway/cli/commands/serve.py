"""`rolecall serve [--host HOST] [--port PORT]`: read the settings, make sure there is an operator
token, and run the gateway (whose start-up upgrades the schema) until Ctrl-C. `--host` and
`--port` take the place of ROLECALL_HOST and ROLECALL_PORT (and so of the address the gateway
gives agents and browsers when ROLECALL_PUBLIC_URL is unset).

Every role manifest is checked before anything is written (the token file included); a failure
to listen is reported as one line only once the app has started, so that an earlier OSError (the
database's) keeps its own message.

Once it listens it prints, on stdout, a first line scripts can rely on —

    Rolecall listening on http://127.0.0.1:8080 (role:concierge)

— and under it where a person goes next (`banner`): the demo page (when the demo role concierge
is served), the script tag that embeds the widget, the HTTP API and its OpenAPI document, the
agent tools (MCP), the operator token file, and each role served with the runtime behind it.
Links use the address browsers and agents reach the gateway at (`Settings.base_url`). Log lines
go to stderr (`gateway.logs`).
"""

from __future__ import annotations

import argparse
import gc
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli._shared import EXIT_USAGE, Failure, read_settings, with_database

if TYPE_CHECKING:
    from core.model.roles import Role
    from gateway.settings import Settings

DEMO_ROLE = "concierge"
"""The role the demo page's widget talks to (`channels/web/static/index.html`)."""


def add_commands(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the gateway (upgrades the schema first)",
        description="Run the gateway on --host and --port (default: ROLECALL_HOST and "
        "ROLECALL_PORT) until Ctrl-C.",
    )
    serve.add_argument(
        "--host", help="the address to listen on (default: $ROLECALL_HOST, else 127.0.0.1)"
    )
    serve.add_argument(
        "--port",
        type=port_number,
        help="the port to listen on, 1-65535 (default: $ROLECALL_PORT, else 8080)",
    )
    serve.set_defaults(command=serve_command)


def port_number(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1-65535, not {value}")
    return value


def settle_memory() -> None:
    """What starting made — modules, the schema, role manifests, the SDKs' objects — lives as
    long as the process: take it out of the garbage collector's sight (`gc.freeze`). A full
    collection under load then walks only what was made since; with everything start-up made
    in view (some 200,000 objects), one took 30-230 ms on the benchmark machine, and every
    request in flight waited through it (now about 3 ms)."""
    gc.collect()
    gc.freeze()


def serve_command(args: argparse.Namespace) -> int:
    given = {"host": args.host, "port": args.port}
    settings = read_settings(**{name: value for name, value in given.items() if value is not None})
    from aiohttp import web

    from core.model.roles import ManifestError
    from gateway.app import build_app
    from gateway.logs import configure_logging
    from gateway.roles import configured_roles
    from gateway.settings import SettingsError, ensure_api_token
    from gateway.single_process import claim_the_database

    try:  # every manifest is checked before anything is written
        roles = configured_roles(settings)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    claim_the_database(settings.database)  # SQLite: this process only, for its whole life
    try:
        token, token_file = ensure_api_token(settings)
    except OSError as exc:
        path = settings.token_file
        raise Failure(f"cannot create the operator token file {path}: {exc}") from None
    configure_logging(settings)
    try:  # a role's Slack app whose named settings are not set, say
        app = build_app(settings, api_token=token, roles=roles)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    except SettingsError as exc:  # an OTEL_* variable the traces cannot work with
        raise Failure(str(exc), EXIT_USAGE) from None
    started = False

    async def mark_started(_app: web.Application) -> None:
        # Runs after the app's own start-up (schema, database): a later OSError is the socket's.
        nonlocal started
        started = True
        settle_memory()

    app.on_startup.append(mark_started)
    said = "\n".join(banner(settings, roles, token_file))

    def run() -> None:
        try:
            web.run_app(
                app,
                host=settings.host,
                port=settings.port,
                access_log=None,  # the application writes its own request log
                print=lambda _its_own: print(said, flush=True),  # ours, once it listens
            )
        except OSError as exc:
            if not started:
                raise
            # A name that does not resolve (socket.gaierror) carries a resolver code, not an errno.
            if exc.errno is not None and not isinstance(exc, socket.gaierror):
                reason = os.strerror(exc.errno)
            else:
                reason = exc.strerror or str(exc)
            raise Failure(f"cannot listen on {settings.host}:{settings.port}: {reason}") from None

    with_database(settings.database, run)
    return 0


def banner(settings: Settings, roles: Mapping[str, Role], token_file: Path | None) -> list[str]:
    """What `serve` prints once it listens: the line `Rolecall listening on <url> (<roles>)`,
    then one line for each place a person goes next. `token_file` is None when the token comes
    from ROLECALL_API_TOKEN."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    serving = ", ".join(f"role:{name}" for name in sorted(roles)) or "no roles"
    base = settings.base_url
    rows: list[tuple[str, str]] = []
    if DEMO_ROLE in roles:
        rows.append(("demo page", f"{base}/"))
    if roles:
        embedded = DEMO_ROLE if DEMO_ROLE in roles else min(roles)
        rows.append(
            ("widget", f'<script src="{base}/widget.js" data-role="{embedded}" async></script>')
        )
    rows += [
        ("console", f"{base}/console (sign in with the operator token)"),
        ("HTTP API", f"{base}/api/v1 (OpenAPI document: {base}/api/v1/openapi.json)"),
        ("agent tools", f"{base}/mcp (MCP)"),
        (
            "operator token",
            str(token_file.absolute()) if token_file is not None else "ROLECALL_API_TOKEN",
        ),
    ]
    if roles:
        width = max(len(f"role:{name}") for name in roles)
        rows += [
            ("roles" if at == 0 else "", f"{f'role:{name}':<{width}}  {runtime_of(roles[name])}")
            for at, name in enumerate(sorted(roles))
        ]
    else:
        rows.append(("roles", f"none: no role manifests in {settings.roles_dir}"))
    label = max(len(name) for name, _ in rows)
    return [
        f"Rolecall listening on http://{host}:{settings.port} ({serving})",
        *(f"  {name:<{label}}  {value}" for name, value in rows),
    ]


def runtime_of(role: Role) -> str:
    """What backs `role`, in a few words; its Slack app too, when it has one."""
    from core.model.roles.role import AcpRuntime, BuiltinRuntime, OpenAIRuntime

    runtime = role.runtime
    if isinstance(runtime, BuiltinRuntime):
        said = f"built-in agent {runtime.agent}"
    elif isinstance(runtime, AcpRuntime):
        said = "ACP agent: " + " ".join((runtime.command, *runtime.args))
    elif isinstance(runtime, OpenAIRuntime):
        said = f"OpenAI-compatible model {runtime.model} at {runtime.base_url}"
    else:
        said = f"A2A agent at {runtime.card_url}"
    if role.slack is not None:
        said += f"; Slack app ({role.slack.mode} mode)"
    return said
