"""`rolecall serve [--host HOST] [--port PORT]`: read the settings, make sure there is an operator
token, and run the gateway (whose start-up upgrades the schema) until Ctrl-C. `--host` and
`--port` take the place of ROLECALL_HOST and ROLECALL_PORT (and so of the address the gateway
gives agents and browsers when ROLECALL_PUBLIC_URL is unset).

Every role manifest is checked before anything is written (the token file included); a failure
to listen is reported as one line only once the app has started, so that an earlier OSError (the
database's) keeps its own message.
"""

from __future__ import annotations

import argparse
import gc
import os
import socket
from typing import Any

from gateway.cli._shared import EXIT_USAGE, Failure, read_settings, with_database


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
    from gateway.settings import ensure_api_token
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
    if token_file is not None:
        print(f"operator API token: {token_file}", flush=True)

    configure_logging(settings)
    try:  # a role's Slack app whose named settings are not set, say
        app = build_app(settings, api_token=token, roles=roles)
    except ManifestError as exc:
        raise Failure(exc.message, EXIT_USAGE) from None
    started = False

    async def mark_started(_app: web.Application) -> None:
        # Runs after the app's own start-up (schema, database): a later OSError is the socket's.
        nonlocal started
        started = True
        settle_memory()

    app.on_startup.append(mark_started)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    serving = ", ".join(f"role:{name}" for name in sorted(roles)) or "no roles"
    listening = f"Rolecall listening on http://{host}:{settings.port} ({serving})"

    def run() -> None:
        try:
            web.run_app(
                app,
                host=settings.host,
                port=settings.port,
                access_log=None,  # the application writes its own request log
                print=lambda _banner: print(listening, flush=True),
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
