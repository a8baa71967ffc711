"""A page whose origin its site does not allow learns why, and the operator hears of it once.

The preflight of any origin is answered (a refused preflight would reach the page's script only
as "the chat cannot be reached"); the request itself is refused with 403 `origin_not_allowed`,
and that refusal — and nothing else the gateway answers such a page — carries the CORS headers
that let the script read it. The refusal is logged at warning level once per origin and site."""

from __future__ import annotations

import logging

import pytest

from tests.web.conftest import SHOP_ORIGIN, Web, user_token

EVIL = "http://evil.test"
OTHER = "https://blog.example.org"


def _refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "rolecall.web" and record.levelno == logging.WARNING
    ]


async def test_a_preflight_from_a_refused_origin_is_answered_so_the_refusal_can_be_read(
    web: Web,
) -> None:
    """The preflight of an origin no site allows passes with the CORS headers the request needs;
    the request is then refused in a way the page's script can read."""
    async with web.http.options(
        web.server.make_url("/widget/v1/sessions"),
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    ) as preflight:
        assert preflight.status == 204
        assert preflight.headers["Access-Control-Allow-Origin"] == EVIL
        assert "Content-Type" in preflight.headers["Access-Control-Allow-Headers"]
        assert "POST" in preflight.headers["Access-Control-Allow-Methods"]

    status, answer, headers = await web.widget(EVIL).call("POST", "/sessions", {"role": "echo"})
    assert status == 403 and answer["error"]["code"] == "origin_not_allowed"
    assert headers["Access-Control-Allow-Origin"] == EVIL
    message = answer["error"]["message"]
    assert EVIL in message and "ROLECALL_SITES" in message and "'default'" in message


async def test_a_refused_page_reads_its_refusal_and_nothing_else(web: Web) -> None:
    """An answer that is not the origin's refusal (here a session token refused before the
    origin is looked at) carries no CORS headers for an origin no site allows."""
    status, answer, headers = await web.widget(EVIL).call(
        "GET", "/history", headers={"Authorization": "Bearer not-a-session"}
    )
    assert status == 401, answer
    assert "Access-Control-Allow-Origin" not in headers


async def test_a_session_used_from_a_refused_origin_is_refused_readably(web: Web) -> None:
    """A session opened by the shop's page, presented by a page of another origin: refused, and
    the refusal is readable there."""
    shop = web.widget(SHOP_ORIGIN)
    await shop.start(site="shop", user_token=user_token("u-1"))
    shop.origin = EVIL
    status, answer, headers = await shop.call("GET", "/history")
    assert status == 403 and answer["error"]["code"] == "origin_not_allowed"
    assert headers["Access-Control-Allow-Origin"] == EVIL
    assert "'shop'" in answer["error"]["message"]


async def test_each_refused_origin_is_logged_once_with_what_allows_it(
    web: Web, caplog: pytest.LogCaptureFixture
) -> None:
    """Many refusals of one origin (a page that retries, its many visitors) log one warning that
    names the origin, the site and the setting; another origin, or another site, logs its own."""
    caplog.set_level(logging.WARNING, logger="rolecall.web")
    for _ in range(3):
        status, _, _ = await web.widget(EVIL).call("POST", "/sessions", {"role": "echo"})
        assert status == 403
    (logged,) = _refusals(caplog)
    assert EVIL in logged and "'default'" in logged and "ROLECALL_SITES" in logged

    status, _, _ = await web.widget(OTHER).call("POST", "/sessions", {"role": "echo"})
    assert status == 403
    # The shop's own pages may not use the site `default`: that is a refusal of its own too.
    status, _, _ = await web.widget(SHOP_ORIGIN).call("POST", "/sessions", {"role": "echo"})
    assert status == 403
    shop_site = {"role": "echo", "site": "shop"}
    status, _, _ = await web.widget(EVIL).call("POST", "/sessions", shop_site)
    assert status == 403
    refusals = _refusals(caplog)
    assert len(refusals) == 4, refusals
    assert OTHER in refusals[1] and SHOP_ORIGIN in refusals[2] and "'shop'" in refusals[3]


async def test_allowed_origins_are_answered_as_before(web: Web) -> None:
    """The shop's own page: CORS headers on its answers, no warning, no refusal."""
    shop = web.widget(SHOP_ORIGIN)
    await shop.start(site="shop", user_token=user_token("u-2"))
    status, _, headers = await shop.call("GET", "/history")
    assert status == 200 and headers["Access-Control-Allow-Origin"] == SHOP_ORIGIN
