"""A small synchronous client of a running gateway's HTTP API, for the CLI.

The CLI changes threads through the gateway rather than the database, so that the gateway's
listeners (runs, channel deliveries) are nudged by every change exactly as for any other caller.
JSON goes in and out; every failure — an API error, an unreachable gateway, an answer that is not
the gateway's — becomes one `ClientError(code, message, status)`. `status` is the HTTP status of an
API error and None when no HTTP answer came back.

Standard library only (`urllib.request`): a CLI call is one short request, and importing nothing
heavy keeps the command quick to start.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8080"
API_PREFIX = "/api/v1"

JSON = dict[str, Any]


class ClientError(Exception):
    """The request failed. `code` is the gateway's error code (or a transport code)."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    data: JSON


def check_base_url(url: str) -> str:
    """The base URL without a trailing slash, or `ValueError` saying what is wrong with it."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"the gateway URL must look like {DEFAULT_URL}, not {url!r}")
    return url.rstrip("/")


def _segment(value: str) -> str:
    """One path segment; addresses keep their readable `kind:name` form."""
    return urllib.parse.quote(value, safe=":@")


class GatewayClient:
    """`token_source` says where the token came from (`--token`, an environment variable, a
    file), for the error when the gateway refuses it."""

    def __init__(
        self, base_url: str, token: str, *, token_source: str = "", timeout: float = 30.0
    ) -> None:
        self.base_url = check_base_url(base_url)
        self._token = token
        self._token_source = token_source
        self._timeout = timeout

    # -- the thread API ------------------------------------------------------------------------

    def resolve_thread(self, participants: list[str]) -> tuple[JSON, bool]:
        """The thread of this participant set, and whether this call created it."""
        response = self.request("POST", "/threads", body={"participants": participants})
        return response.data, response.status == 201

    def get_thread(self, thread_id: str) -> JSON:
        return self.request("GET", f"/threads/{_segment(thread_id)}").data

    def list_threads(
        self, participant: str, *, after: str | None = None, limit: int | None = None
    ) -> JSON:
        query = {"participant": participant}
        if after is not None:
            query["after"] = after
        if limit is not None:
            query["limit"] = str(limit)
        return self.request("GET", "/threads", query=query).data

    def send_message(self, thread_id: str, author: str, text: str) -> JSON:
        body = {"author": author, "text": text}
        return self.request("POST", f"/threads/{_segment(thread_id)}/messages", body=body).data

    def timeline(
        self,
        thread_id: str,
        *,
        as_participant: str | None = None,
        after: int | None = None,
        before: int | None = None,
        latest: bool = False,
        limit: int | None = None,
        include_archived: bool = False,
    ) -> JSON:
        """Forward from `after` (default: the start), or backward: before `before`, or the newest
        page with `latest`. With `as_participant`, only what that participant may see. What was
        said before the latest "start fresh" is left out unless `include_archived`."""
        query = {
            "as": as_participant,
            "after": after,
            "before": before,
            "latest": "true" if latest else None,
            "limit": limit,
            "include_archived": "true" if include_archived else None,
        }
        return self.request("GET", f"/threads/{_segment(thread_id)}/timeline", query=query).data

    def set_participant_state(self, thread_id: str, address: str, state: str) -> JSON:
        path = f"/threads/{_segment(thread_id)}/participants/{_segment(address)}"
        return self.request("POST", path, body={"state": state}).data

    def retract(
        self, thread_id: str, message_id: str, author: str, reason: str | None = None
    ) -> JSON:
        path = f"/threads/{_segment(thread_id)}/messages/{_segment(message_id)}/retract"
        body: JSON = {"author": author}
        if reason is not None:
            body["reason"] = reason
        return self.request("POST", path, body=body).data

    def events(self, *, after: int, wait: int = 0, limit: int | None = None) -> JSON:
        """Committed events of every thread after position `after`; with `wait` (seconds, at
        most 30) the gateway holds the request until there is one."""
        query = {"after": after, "wait": wait or None, "limit": limit}
        return self.request("GET", "/events", query=query).data

    # -- the run API ---------------------------------------------------------------------------

    def list_runs(
        self,
        *,
        thread_id: str | None = None,
        task_id: str | None = None,
        role: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> JSON:
        """The runs of a thread or on a task, or a page of the runs of a role (oldest first)."""
        query = {"thread": thread_id, "task": task_id, "role": role, "after": after, "limit": limit}
        return self.request("GET", "/runs", query=query).data

    def get_run(self, run_id: str) -> JSON:
        return self.request("GET", f"/runs/{_segment(run_id)}").data

    def run_turns(self, run_id: str, *, after: int | None = None, limit: int | None = None) -> JSON:
        """A run's finished turns (its transcript), oldest first, after turn number `after`."""
        query = {"after": after, "limit": limit}
        return self.request("GET", f"/runs/{_segment(run_id)}/turns", query=query).data

    def cancel_turn(self, run_id: str) -> JSON:
        """Stop the run's running turn; 409 `no_turn_running` when none runs."""
        return self.request("POST", f"/runs/{_segment(run_id)}/cancel", body={}).data

    def start_fresh(self, run_id: str) -> JSON:
        """Open the run's next session; what was said before it is archived."""
        return self.request("POST", f"/runs/{_segment(run_id)}/sessions", body={}).data

    def mint_run_token(self, run_id: str) -> JSON:
        """A new bearer token naming the run, for the agent tools (shown once)."""
        return self.request("POST", f"/runs/{_segment(run_id)}/token", body={}).data

    # -- the role and task API ----------------------------------------------------------------

    def list_roles(self) -> JSON:
        """The roles the gateway serves, by name: `{"roles": [role, …]}`."""
        return self.request("GET", "/roles").data

    def get_role(self, name: str) -> JSON:
        return self.request("GET", f"/roles/{_segment(name.removeprefix('role:'))}").data

    def list_tasks(
        self,
        *,
        status: str | None = None,
        assignee: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> JSON:
        query = {"status": status, "assignee": assignee, "after": after, "limit": limit}
        return self.request("GET", "/tasks", query=query).data

    def get_task(self, task_id: str) -> JSON:
        """The task with its history (its events, oldest first)."""
        return self.request("GET", f"/tasks/{_segment(task_id)}").data

    def create_task(self, fields: JSON) -> JSON:
        """`{author, title, body?, assignee?, external?}`: the task plus its `created` event."""
        return self.request("POST", "/tasks", body=fields).data

    def update_task(self, task_id: str, change: JSON) -> JSON:
        """`{author, title?, body?, status?, assignee?}`: the task plus the `updated` event
        (null when nothing changed)."""
        return self.request("PATCH", f"/tasks/{_segment(task_id)}", body=change).data

    def comment_on_task(self, task_id: str, author: str, text: str) -> JSON:
        path = f"/tasks/{_segment(task_id)}/comments"
        return self.request("POST", path, body={"author": author, "text": text}).data

    # -- the person API ------------------------------------------------------------------------

    def list_persons(self, *, after: str | None = None, limit: int | None = None) -> JSON:
        return self.request("GET", "/persons", query={"after": after, "limit": limit}).data

    def get_person(self, slug: str) -> JSON:
        """The person with their identities."""
        return self.request("GET", f"/persons/{_segment(slug)}").data

    def create_person(
        self, display_name: str, *, slug: str | None = None, email: str | None = None
    ) -> JSON:
        body: JSON = {"display_name": display_name, "slug": slug, "email": email}
        return self.request("POST", "/persons", body=body).data

    def update_person(self, slug: str, change: JSON) -> JSON:
        """Change `active`, `display_name` or `email`; the person with their identities."""
        return self.request("PATCH", f"/persons/{_segment(slug)}", body=change).data

    def add_identity(self, slug: str, identity: str) -> JSON:
        path = f"/persons/{_segment(slug)}/identities"
        return self.request("POST", path, body={"identity": identity}).data

    def new_link_code(self, slug: str, *, ttl_seconds: int | None = None) -> JSON:
        """A one-time link code for the person: `{code, person, expires_at}`, shown once."""
        path = f"/persons/{_segment(slug)}/link-codes"
        return self.request("POST", path, body={"ttl_seconds": ttl_seconds}).data

    def redeem_link_code(self, code: str, identity: str) -> JSON:
        """Link the identity to the code's person; that person with their identities."""
        body = {"code": code, "identity": identity}
        return self.request("POST", "/link-codes/redeem", body=body).data

    def erasure_plan(self, slug: str) -> JSON:
        """What erasing the person would remove: `{person, erases: {threads, messages, …}}`."""
        return self.request("GET", f"/persons/{_segment(slug)}/erasure").data

    def erase_person(self, slug: str) -> JSON:
        """Erase the person (docs/privacy.md); the tombstone left, with `erased`: what went."""
        path = f"/persons/{_segment(slug)}"
        return self.request("DELETE", path, query={"erase": "true"}).data

    # -- transport -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        body: JSON | None = None,
        query: Mapping[str, object] | None = None,
    ) -> Response:
        url = self.base_url + API_PREFIX + path
        pairs = {k: str(v) for k, v in (query or {}).items() if v is not None}
        if pairs:
            url += "?" + urllib.parse.urlencode(pairs)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self._token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                return Response(answer.status, self._decode(answer.read(), answer.status))
        except urllib.error.HTTPError as exc:
            with exc:
                raise self._api_error(exc.code, exc.read()) from None
        except urllib.error.URLError as exc:
            raise self._transport_error(exc.reason) from None
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise self._transport_error(exc) from None

    def _decode(self, raw: bytes, status: int) -> JSON:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ClientError(
                "bad_response",
                f"{self.base_url} answered HTTP {status} without a JSON object "
                "— is it a Rolecall gateway?",
                status,
            )
        return data

    def _api_error(self, status: int, raw: bytes) -> ClientError:
        if status == 401:
            # The token was sent (a client always sends one): the gateway refused it.
            source = f" ({self._token_source})" if self._token_source else ""
            if _error_code(raw) == "token_revoked":
                return ClientError(
                    "token_revoked",
                    f"the gateway at {self.base_url} refused the operator token{source}: it "
                    "was revoked",
                    status,
                )
            return ClientError(
                "unauthorized",
                f"the gateway at {self.base_url} refused the operator token{source}",
                status,
            )
        try:
            error = json.loads(raw).get("error")
            code, message = str(error["code"]), str(error["message"])
        except (ValueError, AttributeError, KeyError, TypeError):
            return ClientError(
                f"http_{status}",
                f"{self.base_url} answered HTTP {status} without an error body "
                "— is it a Rolecall gateway?",
                status,
            )
        return ClientError(code, message, status)

    def _transport_error(self, reason: object) -> ClientError:
        if isinstance(reason, ConnectionRefusedError):
            return ClientError(
                "unreachable",
                f"no gateway answers at {self.base_url} — start it with `rolecall serve`",
            )
        if isinstance(reason, TimeoutError):
            return ClientError(
                "timeout", f"the gateway at {self.base_url} did not answer in {self._timeout:g}s"
            )
        return ClientError("unreachable", f"cannot reach the gateway at {self.base_url}: {reason}")


def _error_code(raw: bytes) -> str | None:
    """The `error.code` of an answer in the gateway's error shape, or None."""
    try:
        return str(json.loads(raw)["error"]["code"])
    except (ValueError, TypeError, KeyError):
        return None
