"""`rolecall token …`: named, revocable operator tokens on a running gateway (docs/audit.md).

    rolecall token create NAME
    rolecall token list
    rolecall token revoke NAME

`create` prints the new token alone on stdout, once (`export ROLECALL_API_TOKEN=$(rolecall token
create ci)`); the gateway keeps only its digest. Whoever uses it is `NAME` in the audit trail.
`list` shows every token — when it was made, last used, revoked — never a token. `revoke` refuses
the token from then on, on every replica. `default` is the gateway's configured token
(ROLECALL_API_TOKEN or var/api-token): listed and revocable, never made here.
"""

from __future__ import annotations

import argparse
import urllib.parse
from functools import partial
from typing import Any

from gateway.cli._shared import command_group, gateway_client, gateway_command, output, table
from gateway.cli.client import JSON

NAME_HELP = "the token's name: 1-64 of a-z, 0-9, '.', '_' or '-' (who the audit trail says acted)"


def add_commands(commands: Any) -> None:
    token = command_group(
        commands,
        "token",
        "named, revocable operator tokens",
        "Make, list and revoke the operator tokens of a running gateway; each is named, and the "
        "audit trail records every action by its token's name (docs/audit.md).",
    )
    add = partial(gateway_command, token)
    sub = add("create", token_create_command, "make a named operator token (printed once)")
    sub.add_argument("name", metavar="NAME", help=NAME_HELP)
    add("list", token_list_command, "every operator token: made, last used, revoked")
    sub = add("revoke", token_revoke_command, "revoke a token: refused from now on")
    sub.add_argument("name", metavar="NAME", help="the token's name")


def _path(name: str) -> str:
    return "/tokens/" + urllib.parse.quote(name, safe="")


def token_create_command(args: argparse.Namespace) -> int:
    made = gateway_client(args).request("POST", "/tokens", body={"name": args.name}).data
    return output(args, made, lambda m: print(m["token"]))


def token_list_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).request("GET", "/tokens").data
    return output(args, answer, _print_tokens)


def token_revoke_command(args: argparse.Namespace) -> int:
    revoked = gateway_client(args).request("DELETE", _path(args.name)).data
    return output(args, revoked, lambda t: print(f"revoked {t['name']} at {t['revoked_at']}"))


def _print_tokens(answer: JSON) -> None:
    rows = [["NAME", "CREATED", "LAST_USED", "REVOKED"]]
    for t in answer.get("tokens") or []:
        name = str(t.get("name")) + (" (configured)" if t.get("configured") else "")
        rows.append(
            [
                name,
                str(t.get("created_at")),
                str(t.get("last_used_at") or "-"),
                str(t.get("revoked_at") or "-"),
            ]
        )
    print(table(rows))
