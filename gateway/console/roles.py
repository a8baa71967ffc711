"""The console's roles: every role the gateway serves, and one role's manifest as loaded.

    GET /console/roles[?after=NAME]
                                each role, `PAGE` at a time by name: its runtime, its main
                                limits, how its agents fare
    GET /console/roles/{name}   one role: runtime, limits, secrets by setting name, the whole
                                manifest as loaded, how its agents fare, its failed runs

**Data.** A role is `GET /api/v1/roles/{name}`: the manifest as loaded, defaults filled in,
whose secrets are the names of the settings holding them (a manifest holds nothing else; the
API reads no value). How its agents fare comes from two API answers: its runs whose status is
failed now (`GET /api/v1/runs?role=…&status=failed`: their last turn failed every attempt, and
each waits for new news or a retry) and its failed turns in the last hour (`GET
/api/v1/overview`, `last_hour.failures`).

**Health** (`health_of`) is a judgement of those figures, not a probe of the agent: *failing*
when any run of the role is failed now; *unsteady* when none is, but turns of it failed in the
last hour (retried or answered since); *healthy* when neither. A role whose agent is down but
has had nothing to do is healthy here until a turn fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gateway.console.api import QueryValue, api_path
from gateway.console.guard import Visit, page
from gateway.console.render import render

PAGE = 25
"""Roles on a page of the list."""
COUNTED = 20
"""Failed runs counted per role on the list ("20 or more" past that)."""
SHOWN = 10
"""Failed runs listed on a role's page."""
SLACK_FIELDS = ("signing_secret", "bot_token", "app_token", "client_id", "client_secret")
RETENTION = ("messages", "memory", "transcripts", "deliveries")


@dataclass(frozen=True, slots=True, kw_only=True)
class Health:
    word: str
    """`healthy`, `unsteady` or `failing`."""
    failed_runs: int
    more_failed: bool
    """More runs are failed than `failed_runs` counts."""
    failed_turns_hour: int
    failed_runs_hour: int

    @property
    def sentence(self) -> str:
        runs = f"{self.failed_runs}{' or more' if self.more_failed else ''}"
        if self.word == "failing":
            if self.failed_runs == 1 and not self.more_failed:
                return "1 run is failed now: its last turn failed every attempt."
            return f"{runs} runs are failed now: the last turn of each failed every attempt."
        if self.word == "unsteady":
            turns = self.failed_turns_hour
            return (
                f"No run is failed now, but {turns} turn{'' if turns == 1 else 's'} failed in the "
                "last hour."
            )
        return "No run is failed and no turn failed in the last hour."


def health_of(failed: dict[str, Any], hour: dict[str, Any] | None) -> Health:
    """A role's health from its failed runs (a page of `GET /api/v1/runs`) and its entry of the
    overview's `last_hour.failures` (None: no failed turn in the hour)."""
    now = len(failed["runs"])
    turns = int(hour["turns"]) if hour else 0
    word = "failing" if now else ("unsteady" if turns else "healthy")
    return Health(
        word=word,
        failed_runs=now,
        more_failed=failed["next"] is not None,
        failed_turns_hour=turns,
        failed_runs_hour=int(hour["runs"]) if hour else 0,
    )


async def _failures_last_hour(visit: Visit) -> dict[str, dict[str, Any]]:
    overview = await visit.api.get(api_path("overview"))
    return {f["role"]: f for f in overview["last_hour"]["failures"]}


async def _failed_runs(visit: Visit, role: str, limit: int) -> dict[str, Any]:
    query: dict[str, QueryValue] = {"role": role, "status": "failed", "limit": limit}
    found: dict[str, Any] = await visit.api.get(api_path("runs"), query)
    return found


def secrets_of(role: dict[str, Any]) -> list[tuple[str, str]]:
    """Each field of the manifest that names a setting holding a secret, and that setting."""
    named: list[tuple[str, str]] = []
    runtime = role["runtime"]
    for variable, setting in (runtime.get("secrets") or {}).items():
        named.append((f"runtime.secrets.{variable}", setting))
    if runtime.get("api_key"):
        named.append(("runtime.api_key", runtime["api_key"]))
    if runtime.get("auth"):
        named.append(("runtime.auth.token", runtime["auth"]["token"]))
    slack = role.get("slack") or {}
    named += [(f"slack.{f}", slack[f]) for f in SLACK_FIELDS if slack.get(f)]
    return named


def limits_of(role: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The role's limits: the manifest's field, its value as a person reads it, and what it
    limits."""
    runtime = role["runtime"]
    rows = [
        (
            "concurrent_threads",
            "yes" if role["concurrent_threads"] else "no",
            "its conversations' turns may run at the same time",
        ),
        ("max_concurrent_turns", str(role["max_concurrent_turns"]), "turns running at once"),
        ("turn_timeout", f"{role['turn_timeout']:g} s", "before a turn fails"),
        ("idle_sleep_after", f"{role['idle_sleep_after']:g} s", "before a session sleeps"),
        (
            "max_tool_calls_per_turn",
            str(role["max_tool_calls_per_turn"]),
            "calls of the gateway's tools in one turn",
        ),
    ]
    if "max_tool_calls" in runtime:
        rows.append(
            ("runtime.max_tool_calls", str(runtime["max_tool_calls"]), "model tool calls a turn")
        )
    if "max_processes" in runtime:
        rows.append(
            ("runtime.max_processes", str(runtime["max_processes"]), "agent processes at once")
        )
    approvals = role["approvals"]
    rows.append(("approvals.expires_in", f"{approvals['expires_in']:g} s", "to answer a question"))
    for name in RETENTION:
        kept = role["retention"][name]
        rows.append((f"retention.{name}", kept or "the gateway's default", f"{name} kept"))
    return rows


def runtime_of(role: dict[str, Any]) -> list[tuple[str, Any]]:
    """The runtime's fields but those naming secrets (listed apart) and the limits."""
    hidden = {"secrets", "api_key", "auth", "max_tool_calls", "max_processes"}
    return [(k, v) for k, v in role["runtime"].items() if k not in hidden]


@page
async def roles(request: web.Request, visit: Visit) -> web.StreamResponse:
    after = request.query.get("after") or None
    found = await visit.api.get(api_path("roles"), {"after": after, "limit": PAGE})
    hour = await _failures_last_hour(visit)
    shown = [
        (role, health_of(await _failed_runs(visit, role["name"], COUNTED), hour.get(role["name"])))
        for role in found["roles"]
    ]
    return render(
        "roles.html", **visit.context("roles"), roles=shown, after=after, next=found["next"]
    )


@page
async def role(request: web.Request, visit: Visit) -> web.StreamResponse:
    name = request.match_info["name"]
    shown: dict[str, Any] = await visit.api.get(api_path("roles", name))
    failed = await _failed_runs(visit, name, SHOWN)
    hour = (await _failures_last_hour(visit)).get(name)
    return render(
        "role.html",
        **visit.context("roles"),
        role=shown,
        health=health_of(failed, hour),
        failed=failed["runs"],
        secrets=secrets_of(shown),
        limits=limits_of(shown),
        runtime=runtime_of(shown),
    )
