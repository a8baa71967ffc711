"""What an operator can do to a person from the console, each through a confirmation.

    GET  /console/people/{slug}/{action}[?identity=ID | into=SLUG]   what the action will do
    POST /console/people/{slug}/{action}                              do it (CSRF)

`action` is one of:

- `link` (`identity`): `POST /api/v1/persons/{slug}/identities`. An identity that is someone
  else's is refused by the API (`identity_taken`): only a link code moves one.
- `link-code`: `POST /api/v1/persons/{slug}/link-codes`; the code is shown once, on the page
  that answers the POST (it is never stored, so it cannot be shown again).
- `merge` (`into`): the API merges a person when their last identity is moved to another by a
  link code (`POST /api/v1/link-codes/redeem`, docs/api.md "People"). So the console issues the
  other person a code for each identity and redeems it with that identity, in order; the last
  one merges, re-addressing the conversations. Every step is the API's own, audited
  (`person.link_code`, `person.link`, then `person.merge`). A person without identities cannot
  be merged (the API has no way to), and the confirmation says so.
- `deactivate`, `activate`: `PATCH /api/v1/persons/{slug}` with `active`.
- `erase`: `DELETE /api/v1/persons/{slug}?erase=true`, its confirmation listing what
  `GET /api/v1/persons/{slug}/erasure` says will go.

The confirmation (`plan`) reads what it describes from the API and changes nothing; its form
posts the same fields back, and the change is the API's answer to them — a refusal is shown on
the confirmation page as its sentence. Each change answers 303 to the person's page with
`?done=` (POST/redirect/GET), except a link code, which is shown directly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from gateway.console.api import ApiRefused, api_path
from gateway.console.guard import Visit, as_sentence, page
from gateway.console.render import render

SHOWN_THREADS = 50
"""Conversations a merge confirmation lists by name (it says how many more there are)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What an action will do, as its confirmation page says it."""

    title: str
    says: list[str]
    items: list[str] = field(default_factory=list)
    """What moves or goes, one line each."""
    button: str
    fields: Mapping[str, str] = field(default_factory=dict)
    """The form's fields besides the CSRF token (what the change needs)."""
    possible: bool = True
    danger: bool = False


Planner = Callable[[Visit, dict[str, Any], Mapping[str, str]], Awaitable[Plan]]
Doer = Callable[[Visit, dict[str, Any], Mapping[str, str]], Awaitable[web.StreamResponse]]


def _to_person(slug: str, done: str) -> web.Response:
    return web.Response(status=303, headers={"Location": f"/console/people/{slug}?done={done}"})


def _needed(given: Mapping[str, str], name: str, what: str) -> str:
    value = given.get(name, "").strip()
    if not value:
        raise ApiRefused(422, f"missing_{name}", f"give {what}")
    return value


# --- link an identity -----------------------------------------------------------------------------


async def plan_link(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> Plan:
    identity = _needed(given, "identity", "the identity to link (like slack:T123:U456)")
    name = f"{person['display_name']} ({person['address']})"
    return Plan(
        title="Link an identity",
        says=[
            f"The identity {identity} will be linked to {name}: what is said from it on its "
            "channel is then theirs.",
            "If it is someone else's identity, the gateway refuses and nothing changes "
            "(only a link code moves an identity from one person to another).",
        ],
        button="Link the identity",
        fields={"identity": identity},
    )


async def do_link(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> web.Response:
    identity = _needed(given, "identity", "the identity to link")
    path = api_path("persons", person["slug"], "identities")
    answer = await visit.api.call("POST", path, body={"identity": identity})
    return _to_person(person["slug"], "linked" if answer.status == 201 else "already")


# --- issue a link code ----------------------------------------------------------------------------


async def plan_code(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> Plan:
    return Plan(
        title="Issue a link code",
        says=[
            f"A one-time link code for {person['display_name']} ({person['address']}) will be "
            "issued, valid for 15 minutes. Whoever redeems it with a channel identity links "
            "that identity to them — moving it from its person if it was someone else's, and "
            "merging that person into them if it was their last identity.",
            "The code is shown once, on the next page; the gateway keeps only its digest.",
        ],
        button="Issue the code",
    )


async def do_code(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> web.Response:
    path = api_path("persons", person["slug"], "link-codes")
    made = (await visit.api.call("POST", path, body={})).body
    return render("person_code.html", **visit.context("people"), person=person, made=made)


# --- merge ---------------------------------------------------------------------------------------


async def plan_merge(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> Plan:
    into_slug = _needed(given, "into", "the slug of the person to merge into")
    into = await visit.api.get(api_path("persons", into_slug))
    source, target = person["address"], into["address"]
    identities = [i["identity"] for i in person["identities"]]
    threads = await visit.api.get(
        api_path("threads"), {"participant": source, "limit": SHOWN_THREADS}
    )
    moving = [
        "conversation with " + ", ".join(p["address"] for p in t["participants"])
        for t in threads["threads"]
    ]
    if threads["next"]:
        moving.append(f"and more conversations (only the first {SHOWN_THREADS} are listed)")
    if into["slug"] == person["slug"]:
        return _impossible("A person cannot be merged into themselves.")
    if not identities:
        return _impossible(
            f"{source} has no identity, and the gateway merges a person only when a link code "
            "moves their last identity to another: link one first, or leave them as they are."
        )
    return Plan(
        title=f"Merge {source} into {target}",
        says=[
            f"{source} ({person['display_name']}) will be merged into {target} "
            f"({into['display_name']}), for good: {source} becomes inactive and names "
            f"{target} as whom they became.",
            f"Their {len(identities)} identities move to {target}, one link code each; moving "
            "the last one merges them. Their conversations follow: in each, their address is "
            f"replaced by {target}, with everything said kept. Where {target} already has a "
            "conversation with the same others, both are kept, the older as its predecessor.",
        ],
        items=[f"identity {i}" for i in identities] + moving,
        button=f"Merge into {target}",
        fields={"into": into["slug"]},
        danger=True,
    )


def _impossible(sentence: str) -> Plan:
    return Plan(title="This merge is not possible", says=[sentence], button="", possible=False)


async def do_merge(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> web.Response:
    into = _needed(given, "into", "the slug of the person to merge into")
    codes = api_path("persons", into, "link-codes")
    for linked in person["identities"]:
        made = (await visit.api.call("POST", codes, body={})).body
        redeem = {"code": made["code"], "identity": linked["identity"]}
        await visit.api.call("POST", api_path("link-codes", "redeem"), body=redeem)
    return _to_person(into, "merged")


# --- deactivate, activate -------------------------------------------------------------------------


async def plan_deactivate(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> Plan:
    return Plan(
        title=f"Deactivate {person['address']}",
        says=[
            f"{person['display_name']} ({person['address']}) will be deactivated: the runs of "
            "their conversations lose their tools at once (unless another person of the "
            "conversation is still active there), and no identity or link code can be added "
            "to them.",
            "Nothing is deleted; they can be made active again from their page.",
        ],
        button="Deactivate",
        danger=True,
    )


async def plan_activate(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> Plan:
    return Plan(
        title=f"Reactivate {person['address']}",
        says=[
            f"{person['display_name']} ({person['address']}) will be active again: the runs of "
            "their conversations get their tools back, and identities and link codes can be "
            "added to them."
        ],
        button="Reactivate",
    )


def _set_active(active: bool) -> Doer:
    async def do(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> web.Response:
        path = api_path("persons", person["slug"])
        await visit.api.call("PATCH", path, body={"active": active})
        return _to_person(person["slug"], "activated" if active else "deactivated")

    return do


# --- erase ---------------------------------------------------------------------------------------

ERASES = (
    ("threads", "conversations whose messages become tombstones"),
    ("messages", "messages (theirs; in their conversations with a role, all)"),
    ("memory_entries", "memory entries"),
    ("turns", "transcripts, which lose their prompt and steps"),
    ("slack_posts", "Slack posts of the gateway in their DMs, deleted from Slack"),
    ("identities", "identities"),
    ("link_codes", "link codes"),
)


async def plan_erase(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> Plan:
    planned = await visit.api.get(api_path("persons", person["slug"], "erasure"))
    erases: dict[str, int] = planned["erases"]
    return Plan(
        title=f"Erase {person['address']}",
        says=[
            f"{person['display_name']} ({person['address']}) will be erased, for good: their "
            "name and email are removed, their slug is never anyone's again, and the turns "
            "running in their conversations are stopped, each conversation's run starting "
            "fresh. This removes:"
        ],
        items=[f"{erases.get(key, 0)} {words}" for key, words in ERASES],
        button="Erase for good",
        danger=True,
    )


async def do_erase(visit: Visit, person: dict[str, Any], given: Mapping[str, str]) -> web.Response:
    path = api_path("persons", person["slug"])
    await visit.api.call("DELETE", path, query={"erase": True})
    return _to_person(person["slug"], "erased")


ACTIONS: Mapping[str, tuple[Planner, Doer]] = {
    "link": (plan_link, do_link),
    "link-code": (plan_code, do_code),
    "merge": (plan_merge, do_merge),
    "deactivate": (plan_deactivate, _set_active(False)),
    "activate": (plan_activate, _set_active(True)),
    "erase": (plan_erase, do_erase),
}


async def _person_and_action(request: web.Request, visit: Visit) -> tuple[dict[str, Any], str]:
    action = request.match_info["action"]
    if action not in ACTIONS:
        raise ApiRefused(404, "no_such_action", f"the console cannot {action!r} a person")
    person = await visit.api.get(api_path("persons", request.match_info["slug"]))
    return person, action


def _confirmation(
    visit: Visit,
    person: dict[str, Any],
    action: str,
    plan: Plan,
    refused: ApiRefused | None = None,
) -> web.Response:
    """The confirmation page; after a refused change, with the refusal's sentence and status."""
    return render(
        "person_confirm.html",
        status=200 if refused is None else refused.status,
        **visit.context("people"),
        person=person,
        action=action,
        plan=plan,
        error=as_sentence(refused.message) if refused is not None else None,
    )


@page
async def confirm(request: web.Request, visit: Visit) -> web.StreamResponse:
    person, action = await _person_and_action(request, visit)
    planner, _ = ACTIONS[action]
    return _confirmation(visit, person, action, await planner(visit, person, request.query))


@page
async def act(request: web.Request, visit: Visit) -> web.StreamResponse:
    person, action = await _person_and_action(request, visit)
    planner, doer = ACTIONS[action]
    try:
        return await doer(visit, person, visit.form)
    except ApiRefused as refused:
        person = await visit.api.get(api_path("persons", person["slug"]))
        plan = await planner(visit, person, visit.form)
        return _confirmation(visit, person, action, plan, refused)
