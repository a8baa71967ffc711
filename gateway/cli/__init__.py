"""The `rolecall` command: run the gateway, upgrade its database, work with threads and runs.

`main.py` builds the top-level parser from the command modules and turns every failure into one
line on stderr, `rolecall: …`, and a non-zero exit: 1 when the gateway or the database refused or
could not be reached, 2 for a usage or configuration error (argparse's own code). Never a
traceback (unless ROLECALL_LOG_LEVEL=debug, for an unexpected error).

    commands/serve.py      rolecall serve (run the gateway until Ctrl-C; its start-up upgrades
                           the schema)
    commands/db.py         rolecall db upgrade
    commands/threads.py    rolecall thread resolve|show|list|send|timeline|remove|readd|retract
    commands/runs.py       rolecall run list|show|turns|cancel|fresh|token
    commands/people.py     rolecall person list|show|create|deactivate|activate|identity-add|
                           link-code|redeem
    commands/slack.py      rolecall slack manifest (docs/slack.md)
    commands/endpoints.py  rolecall endpoint add|list|show|replay|remove (docs/webhooks.md)
    commands/memory.py     rolecall memory list|redact
    commands/hooks.py      rolecall hook test (docs/webhooks.md)
    _shared.py             what the command modules share: `Failure`, the gateway options and
                           client, the settings, the database guard, table and JSON output
    client.py              the small synchronous client of a running gateway's HTTP API

`serve` and `db upgrade` work on the database of the settings directly; every other command that
reaches the gateway talks to a *running* one over its HTTP API (`client.py`), never to the
database, so that every change reaches the gateway's listeners (and its run host) like any other.
Output is a readable table, or with `--json` the gateway's JSON as it came.

Heavy imports (aiohttp, pydantic, SQLAlchemy) happen inside the commands that need them, so thread
and run commands start quickly. Command modules import `_shared` and `client`, never `main` and
never each other.
"""
