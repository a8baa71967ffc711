"""`rolecall db upgrade`: upgrade the database of the settings to the newest schema revision,
without starting the gateway, and say which revision is in force (`database at 0015`)."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli._shared import (
    command_group,
    json_option,
    print_json,
    read_settings,
    with_database,
)


def add_commands(commands: Any) -> None:
    db = command_group(commands, "db", "database maintenance")
    upgrade = db.add_parser(
        "upgrade", help="upgrade the schema to the newest revision", parents=[json_option()]
    )
    upgrade.set_defaults(command=db_upgrade_command)


def db_upgrade_command(args: argparse.Namespace) -> int:
    settings = read_settings()
    import asyncio

    from core.storage.database import upgrade_schema

    url = settings.database
    revision = with_database(url, lambda: asyncio.run(upgrade_schema(url)))
    if args.json:
        print_json({"revision": revision})
    else:
        print(f"database at {revision}")
    return 0
