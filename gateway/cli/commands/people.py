"""`rolecall person …`: people, their channel identities and link codes on a running gateway.

    rolecall person list [--after SLUG] [--limit N]
    rolecall person show SLUG
    rolecall person create DISPLAY_NAME [--slug SLUG] [--email EMAIL]
    rolecall person deactivate SLUG / activate SLUG
    rolecall person identity-add SLUG IDENTITY
    rolecall person link-code SLUG [--ttl SECONDS]
    rolecall person redeem CODE IDENTITY
    rolecall person erase SLUG [--yes]

A deactivated person's runs lose their tools at once (and regain them when activated). A link
code is shown once; redeeming it links the identity to the code's person, merging what it had.
Erasing (docs/privacy.md) first lists what will go and asks for the slug to be typed again
(`--yes` confirms beforehand, for scripts); it cannot be undone.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from functools import partial
from typing import Any

from core.model.erasure import Erasure
from gateway.cli._shared import (
    Failure,
    command_group,
    count,
    gateway_client,
    gateway_command,
    output,
    print_json,
    table,
)
from gateway.cli.client import JSON

SLUG_HELP = "the person's slug (or person:<slug>)"


def add_commands(commands: Any) -> None:
    person = command_group(
        commands,
        "person",
        "people and their channel identities on a running gateway",
        "Work with people, their identities and link codes through a running gateway's HTTP API.",
    )

    add = partial(gateway_command, person)

    sub = add("list", person_list_command, "people in slug order")
    sub.add_argument("--after", metavar="SLUG", help="start after this slug (from a previous page)")
    sub.add_argument("--limit", type=count(1), metavar="N", help="at most N people (1-500; 50)")

    sub = add("show", person_show_command, "a person and their identities")
    sub.add_argument("slug", metavar="SLUG", help=SLUG_HELP)

    sub = add("create", person_create_command, "create a person")
    sub.add_argument("display_name", metavar="DISPLAY_NAME", help="their name as people see it")
    sub.add_argument("--slug", help="their slug (default: derived from the display name)")
    sub.add_argument("--email", help="an email address you vouch for")

    sub = add("deactivate", person_deactivate_command, "deactivate: their runs lose their tools")
    sub.add_argument("slug", metavar="SLUG", help=SLUG_HELP)

    sub = add("activate", person_activate_command, "make a deactivated person active again")
    sub.add_argument("slug", metavar="SLUG", help=SLUG_HELP)

    sub = add("identity-add", person_identity_add_command, "link a channel identity to a person")
    sub.add_argument("slug", metavar="SLUG", help=SLUG_HELP)
    sub.add_argument(
        "identity", metavar="IDENTITY", help="web:<site>:<user> or slack:<team>:<user>"
    )

    sub = add("link-code", person_link_code_command, "a one-time link code (shown once)")
    sub.add_argument("slug", metavar="SLUG", help=SLUG_HELP)
    sub.add_argument("--ttl", type=count(1), metavar="SECONDS", help="lifetime (default 900)")

    sub = add("redeem", person_redeem_command, "link an identity to a link code's person")
    sub.add_argument("code", metavar="CODE", help="the code `rolecall person link-code` gave")
    sub.add_argument(
        "identity", metavar="IDENTITY", help="web:<site>:<user> or slack:<team>:<user>"
    )

    sub = add("erase", person_erase_command, "erase a person for good (lists what goes first)")
    sub.add_argument("slug", metavar="SLUG", help=SLUG_HELP)
    sub.add_argument("--yes", action="store_true", help="confirm without being asked")


# -- the commands ----------------------------------------------------------------------------------


def person_list_command(args: argparse.Namespace) -> int:
    answer = gateway_client(args).list_persons(after=args.after, limit=args.limit)
    if args.json:
        print_json(answer)
        return 0
    persons = answer.get("persons", [])
    if persons:
        rows = [
            [str(p.get("slug")), str(p.get("display_name")), p.get("email") or "-", _state(p)]
            for p in persons
        ]
        print(table([["SLUG", "DISPLAY_NAME", "EMAIL", "STATE"], *rows]))
    else:
        print("(no people)")
    if answer.get("next"):
        print(f"(more: --after {answer['next']})")
    return 0


def person_show_command(args: argparse.Namespace) -> int:
    return output(args, gateway_client(args).get_person(args.slug), _print_person)


def person_create_command(args: argparse.Namespace) -> int:
    created = gateway_client(args).create_person(
        args.display_name, slug=args.slug, email=args.email
    )
    return output(args, created, lambda p: _print_person(p, note="created"))


def person_deactivate_command(args: argparse.Namespace) -> int:
    person = gateway_client(args).update_person(args.slug, {"active": False})
    return output(args, person, _print_person)


def person_activate_command(args: argparse.Namespace) -> int:
    person = gateway_client(args).update_person(args.slug, {"active": True})
    return output(args, person, _print_person)


def person_identity_add_command(args: argparse.Namespace) -> int:
    person = gateway_client(args).add_identity(args.slug, args.identity)
    return output(args, person, _print_person)


def person_link_code_command(args: argparse.Namespace) -> int:
    made = gateway_client(args).new_link_code(args.slug, ttl_seconds=args.ttl)
    return output(args, made, lambda m: print(f"{m['code']}  (expires {m['expires_at']})"))


def person_redeem_command(args: argparse.Namespace) -> int:
    person = gateway_client(args).redeem_link_code(args.code, args.identity)
    return output(args, person, lambda p: _print_person(p, note=f"now has {args.identity}"))


def person_erase_command(args: argparse.Namespace) -> int:
    client = gateway_client(args)
    plan = client.erasure_plan(args.slug)
    person = str(plan.get("person", args.slug))
    if not args.json:
        print(f"Erasing {person} removes, for good: {_described(plan.get('erases'))}.")
    if not args.yes:
        _confirm(person)
    erased = client.erase_person(args.slug)
    return output(args, erased, lambda e: print(f"{person} erased: {_described(e.get('erased'))}."))


def _confirm(person: str) -> None:
    """Ask for the slug again; a script (no terminal) must say `--yes`."""
    slug = person.removeprefix("person:")
    if not sys.stdin.isatty():
        raise Failure(f"not erased: confirm with --yes (or run it in a terminal) to erase {person}")
    typed = input(f"Type {slug!r} to erase them: ").strip()
    if typed not in (slug, person):
        raise Failure(f"not erased: {typed!r} is not {slug!r}")


def _described(counts: object) -> str:
    if not isinstance(counts, dict):
        return "nothing the gateway named"
    known = {f.name for f in fields(Erasure)}
    return Erasure(**{k: int(v) for k, v in counts.items() if k in known}).describe()


# -- output ----------------------------------------------------------------------------------------


def _state(person: JSON) -> str:
    state = str(person.get("state", "?"))
    return f"merged into {person['merged_into']}" if person.get("merged_into") else state


def _print_person(person: JSON, *, note: str | None = None) -> None:
    fields = [
        ["person", str(person.get("address", "")) + (f"  ({note})" if note else "")],
        ["display_name", str(person.get("display_name", ""))],
        ["email", person.get("email") or "-"],
        ["state", _state(person)],
        ["created_at", str(person.get("created_at", ""))],
    ]
    print(table(fields))
    identities = person.get("identities") or []
    print()
    if identities:
        rows = [[str(i.get("identity")), str(i.get("linked_at"))] for i in identities]
        print(table([["IDENTITY", "LINKED_AT"], *rows]))
    else:
        print("(no identities)")
