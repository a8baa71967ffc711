"""Signing in to the console, its session cookie, CSRF, revocation and signing out, over real
HTTP (`gateway.console.login`, `gateway.console.guard`).

- A good operator token gets a session cookie: HttpOnly, SameSite=Strict, Path=/console, twelve
  hours, holding neither the token nor anything the database keeps (only its digest is stored).
- A bad token is refused with a sentence, and no cookie; a revoked one says it was revoked.
- Without the cookie a page redirects to the login page (keeping where it was going), and the
  live stream is 401 in the API's error shape.
- A change without the session's CSRF token (missing, wrong) is 403 with a sentence; the form
  field and the header both carry it.
- Revoking the operator token ends its sessions at the next request, the stream's too.
- Signing out ends the session: its cookie opens nothing any more.
- Signing in and out each leave one audit record under the token's name, naming the same
  session (never the token); a refused sign-in leaves none.
- Sign-in attempts are limited per address: the sixth in a row is 429 with `Retry-After`.
- The token is never in a URL or a cookie.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from http.cookies import SimpleCookie
from typing import Any

from channels.edge.requests import DATABASE_KEY
from core.model.operators import token_digest
from tests.api.conftest import TOKEN
from tests.console.conftest import Console, ConsoleClient, Page


def _session_cookie(page: Page) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for header in page.cookies:
        jar.load(header)
    assert "rolecall_console" in jar, page.cookies
    return jar


def _never_the_token(client: ConsoleClient, token: str) -> None:
    for page in client.seen:
        assert token not in page.location
        assert all(token not in cookie for cookie in page.cookies)
    assert client.cookie() != token


async def test_a_good_token_signs_in_with_a_strict_httponly_cookie_for_the_console_only(
    console: Console,
) -> None:
    client = console.browser()
    form = await client.get("/console/login")
    assert form.status == 200
    assert 'type="password"' in form.text and 'method="post"' in form.text

    signed = await client.sign_in()

    assert signed.location == "/console"
    cookie = _session_cookie(signed)["rolecall_console"]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Strict"
    assert cookie["path"] == "/console"
    assert cookie["max-age"] == str(12 * 3600)
    assert not cookie["secure"]  # served over plain HTTP here
    overview = await client.get("/console")
    assert overview.status == 200, overview.text
    assert "<h1>Overview</h1>" in overview.text
    assert "Signed in as <strong>default</strong>" in overview.text
    _never_the_token(client, TOKEN)


async def test_only_the_session_ids_digest_is_stored_never_the_token(console: Console) -> None:
    client = await console.signed_in()
    session_id = client.cookie()
    assert session_id is not None
    app = console.server.app
    assert app is not None
    found = await app[DATABASE_KEY].console.get(token_digest(session_id))
    assert found is not None and found.operator == "default"
    with contextlib.closing(sqlite3.connect(console.database_file)) as connection:
        stored = repr(connection.execute("SELECT * FROM console_sessions").fetchall())
    assert token_digest(session_id) in stored
    assert session_id not in stored and TOKEN not in stored


async def test_a_bad_token_is_refused_with_a_sentence_and_no_cookie(console: Console) -> None:
    client = console.browser()
    refused = await client.post("/console/login", {"token": "not-a-token-of-this-gateway"})
    assert refused.status == 401
    assert "That is not an operator token this gateway accepts." in refused.text
    assert "Traceback" not in refused.text
    assert refused.cookies == []
    empty = await client.post("/console/login", {"token": ""})
    assert empty.status == 401 and empty.cookies == []
    assert (await client.get("/console")).status == 303


async def test_without_the_cookie_pages_redirect_to_login_and_the_stream_is_401(
    console: Console,
) -> None:
    client = console.browser()
    page = await client.get("/console/conversations?q=alice")
    assert page.status == 303
    assert page.location == "/console/login?next=%2Fconsole%2Fconversations%3Fq%3Dalice"
    assert (await client.get("/console")).location == "/console/login"

    stream = await console.api.get("/console/conversations/" + "0" * 32 + "/stream", token=None)
    assert "sign in" in stream.error(401, "console_session_required")

    # Signing in from that redirect goes back where the browser was going; never elsewhere.
    signed = await client.post(
        "/console/login", {"token": TOKEN, "next": "/console/conversations?q=alice"}
    )
    assert signed.location == "/console/conversations?q=alice"
    away = await console.browser().post(
        "/console/login", {"token": TOKEN, "next": "https://elsewhere.example/console"}
    )
    assert away.location == "/console"


async def test_a_change_without_the_sessions_csrf_token_is_403(console: Console) -> None:
    client = await console.signed_in()
    csrf = (await client.get("/console")).csrf

    missing = await client.post("/console/logout", {})
    wrong = await client.post("/console/logout", {"csrf": csrf[:-2] + "xx"})
    wrong_header = await client.post("/console/logout", {}, headers={"X-CSRF-Token": "nope"})

    for refused in (missing, wrong, wrong_header):
        assert refused.status == 403
        assert "did not carry this session's security token" in refused.said
    assert (await client.get("/console")).status == 200  # still signed in: nothing was done
    by_header = await client.post("/console/logout", {}, headers={"X-CSRF-Token": csrf})
    assert by_header.status == 303
    assert (await client.get("/console")).status == 303


async def test_another_sessions_csrf_token_does_not_do(console: Console) -> None:
    ann, bob = await console.signed_in(), await console.signed_in()
    bobs = (await bob.get("/console")).csrf
    assert (await ann.post("/console/logout", {"csrf": bobs})).status == 403


async def test_revoking_the_token_ends_its_sessions_at_once(console: Console) -> None:
    made = await console.api.post("/api/v1/tokens", {"name": "ci"})
    assert made.status == 201, made.text
    ci_token = made.body["token"]
    client = await console.signed_in(ci_token)
    page = await client.get("/console")
    assert "Signed in as <strong>ci</strong>" in page.text
    thread = await console.api.thread("person:ann", "role:echo")
    stream_path = f"/console/conversations/{thread['id']}/stream"

    assert (await console.api.call("DELETE", "/api/v1/tokens/ci")).status == 200

    ended = await client.get("/console")
    assert ended.status == 303 and ended.location == "/console/login?why=revoked"
    told = await client.get("/console/login?why=revoked")
    assert "was revoked" in told.text
    stream = await client.get(stream_path)
    assert stream.status == 401
    again = await console.browser().post("/console/login", {"token": ci_token})
    assert again.status == 401 and "revoked" in again.text
    _never_the_token(client, ci_token)


async def test_signing_out_ends_the_session(console: Console) -> None:
    client = await console.signed_in()
    session_id = client.cookie()
    csrf = (await client.get("/console")).csrf

    out = await client.post("/console/logout", {"csrf": csrf})

    assert out.status == 303 and out.location == "/console/login?why=signed_out"
    cleared = _session_cookie(out)["rolecall_console"]
    assert cleared.value == "" and cleared["max-age"] == "0"
    assert "You are signed out." in (await client.get(out.location)).text
    replayed = console.browser()
    replayed.session.cookie_jar.update_cookies(
        {"rolecall_console": session_id or ""}, console.server.make_url("/console")
    )
    assert (await replayed.get("/console")).location == "/console/login?why=expired"


async def test_sign_in_attempts_are_limited_per_address(console: Console) -> None:
    client = console.browser()
    for _ in range(5):
        assert (await client.post("/console/login", {"token": "wrong"})).status == 401
    limited = await client.post("/console/login", {"token": TOKEN})
    assert limited.status == 429
    assert re.fullmatch(r"[0-9]+", limited.headers["Retry-After"])
    assert "Too many sign-in attempts from your address" in limited.text
    assert limited.cookies == []


async def test_a_cross_site_sign_in_is_refused(console: Console) -> None:
    client = console.browser()
    refused = await client.post(
        "/console/login", {"token": TOKEN}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert refused.status == 403 and refused.cookies == []


async def test_signing_in_and_out_are_in_the_audit_trail_and_a_refusal_is_not(
    console: Console,
) -> None:
    made = await console.api.post("/api/v1/tokens", {"name": "ops"})
    assert made.status == 201, made.text
    ops_token = made.body["token"]
    assert (await console.browser().post("/console/login", {"token": "wrong"})).status == 401
    client = await console.signed_in(ops_token)
    csrf = (await client.get("/console")).csrf
    assert (await client.post("/console/logout", {"csrf": csrf})).status == 303

    def records(action: str) -> list[dict[str, Any]]:
        return [r for r in trail if r["action"] == action]

    trail = (await console.api.get("/api/v1/audit?limit=200")).body["records"]
    [signed_in] = records("console.sign_in")
    [signed_out] = records("console.sign_out")
    assert signed_in["actor"] == signed_out["actor"] == "ops"
    assert signed_in["client"] == signed_out["client"] == "127.0.0.1"
    assert re.fullmatch(r"[0-9a-f]{12}", signed_in["detail"]["session"])
    assert signed_out["detail"] == signed_in["detail"]
    assert signed_in["position"] < signed_out["position"]
    assert ops_token not in json.dumps(trail)
