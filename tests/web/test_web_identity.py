"""Who the widget's person is: a site's signed user (refused with the reason when the token is
wrong in any way, never downgraded to anonymous), an anonymous visitor who continues across
reloads, a visitor who signs in and keeps what they said, and link codes that join two
identities into one person whose conversation is the same from both."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.web.conftest import OTHER_SECRET, SHOP_ORIGIN, SHOP_SECRET, Web, user_token


async def test_a_signed_user_is_the_person_of_their_site_identity(web: Web) -> None:
    widget = web.widget(SHOP_ORIGIN)
    started = await widget.start(site="shop", user_token=user_token("u-42", "Ann Lee"))
    assert started["person"] == {"slug": "ann-lee", "display_name": "Ann Lee"}
    assert "visitor_token" not in started
    again = await web.widget(SHOP_ORIGIN).start(site="shop", user_token=user_token("u-42"))
    assert again["conversation"] == started["conversation"]
    profile = await web.api.get("/api/v1/persons/ann-lee")
    assert [i["identity"] for i in profile.body["identities"]] == ["web:shop:u-42"]


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: user_token("u-1", expires_in=-120), "expired"),
        (lambda: user_token("u-1", secret=OTHER_SECRET), "signature"),
        (lambda: user_token("u-1")[:-3] + "AAA", "signature"),
        (lambda: user_token("u-1", iss="elsewhere"), "issued for site 'elsewhere'"),
        (lambda: "not-a-jwt", "not a valid JWT"),
    ],
    ids=["expired", "wrong-secret", "tampered", "wrong-site", "garbage"],
)
async def test_a_bad_user_token_is_refused_with_the_reason(
    web: Web, make: Callable[[], str], why: str
) -> None:
    widget = web.widget(SHOP_ORIGIN)  # tokens are made now: one made at collection may expire
    status, answer, _ = await widget.call(
        "POST", "/sessions", {"role": "echo", "site": "shop", "user_token": make()}
    )
    assert status == 401, answer
    assert answer["error"]["code"] == "invalid_user_token"
    assert why in answer["error"]["message"]
    assert "visitor_token" not in answer and "session_token" not in answer


async def test_a_token_without_name_or_exp_is_refused(web: Web) -> None:
    import jwt

    widget = web.widget(SHOP_ORIGIN)
    for claims, missing in (({"sub": "u-1", "exp": 9999999999}, "name"), ({"sub": "u-1"}, "exp")):
        token = jwt.encode(claims, SHOP_SECRET, algorithm="HS256")
        status, answer, _ = await widget.call(
            "POST", "/sessions", {"role": "echo", "site": "shop", "user_token": token}
        )
        assert status == 401 and missing in answer["error"]["message"], answer


async def test_a_site_without_a_secret_signs_no_one_in(web: Web) -> None:
    status, answer, _ = await web.widget().call(
        "POST", "/sessions", {"role": "echo", "user_token": user_token("u-1")}
    )
    assert status == 401 and "no secret" in answer["error"]["message"]


async def test_an_anonymous_visitor_continues_the_same_conversation_after_a_reload(
    web: Web,
) -> None:
    first = web.widget()
    started = await first.start()
    assert started["person"]["display_name"] == "Visitor"
    await first.say("hello from a visitor")
    reloaded = web.widget()
    again = await reloaded.start(visitor_token=started["visitor_token"])
    assert again["conversation"] == started["conversation"]
    texts = [e["text"] for e in (await reloaded.history())["events"] if e["kind"] == "message"]
    assert "hello from a visitor" in texts
    stranger = await web.widget().start()
    assert stranger["conversation"] != started["conversation"]


async def test_a_forged_visitor_token_is_refused(web: Web) -> None:
    started = await web.widget().start()
    forged = started["visitor_token"][:-2] + "xx"
    status, answer, _ = await web.widget().call(
        "POST", "/sessions", {"role": "echo", "visitor_token": forged}
    )
    assert status == 401 and answer["error"]["code"] == "invalid_visitor_token"
    # a default-site visitor is not a visitor of another site
    status, answer, _ = await web.widget(SHOP_ORIGIN).call(
        "POST",
        "/sessions",
        {"role": "echo", "site": "shop", "visitor_token": started["visitor_token"]},
    )
    assert status == 401 and "not for site 'shop'" in answer["error"]["message"]


async def test_a_visitor_who_signs_in_keeps_what_they_said(web: Web) -> None:
    visitor = web.widget(SHOP_ORIGIN)
    anonymous = await visitor.start(site="shop")
    await visitor.say("I asked before signing in")
    signed = await visitor.start(
        site="shop", user_token=user_token("u-7", "Bo"), visitor_token=anonymous["visitor_token"]
    )
    assert signed["person"]["slug"] == "bo"
    texts = [e["text"] for e in (await visitor.history())["events"] if e["kind"] == "message"]
    assert "I asked before signing in" in texts
    mine = [e for e in (await visitor.history())["events"] if e.get("author") == "person:bo"]
    assert mine and all(e["mine"] for e in mine)


async def test_a_link_code_joins_two_identities_into_one_conversation(web: Web) -> None:
    at_work = web.widget(SHOP_ORIGIN)
    await at_work.start(site="shop", user_token=user_token("u-9", "Cy"))
    await at_work.say("said at work")
    status, code, _ = await at_work.call("POST", "/link-codes", {})
    assert status == 201, code

    at_home = web.widget()
    await at_home.start()
    await at_home.say("said at home, anonymously")
    status, linked, _ = await at_home.call("POST", "/link", {"code": code["code"]})
    assert status == 200, linked
    at_home.session = linked
    assert linked["person"]["slug"] == "cy"

    home = [e["text"] for e in (await at_home.history())["events"] if e["kind"] == "message"]
    work = [e["text"] for e in (await at_work.history())["events"] if e["kind"] == "message"]
    assert "said at work" in home and "said at work" in work
    status, again, _ = await at_home.call("POST", "/link", {"code": code["code"]})
    assert status in (404, 410), again  # a code is used once


async def test_origins_are_checked_per_site_and_answered_with_cors(web: Web) -> None:
    status, answer, headers = await web.widget("http://evil.test").call(
        "POST", "/sessions", {"role": "echo", "site": "shop"}
    )
    assert status == 403 and answer["error"]["code"] == "origin_not_allowed"
    assert headers["Access-Control-Allow-Origin"] == "http://evil.test"  # the refusal is readable
    status, _, headers = await web.widget(SHOP_ORIGIN).call(
        "POST", "/sessions", {"role": "echo", "site": "shop"}
    )
    assert status == 200 and headers["Access-Control-Allow-Origin"] == SHOP_ORIGIN
    # the shop's pages may not use the default site
    status, answer, _ = await web.widget(SHOP_ORIGIN).call("POST", "/sessions", {"role": "echo"})
    assert status == 403
    async with web.http.options(
        web.server.make_url("/widget/v1/sessions"),
        headers={"Origin": SHOP_ORIGIN, "Access-Control-Request-Method": "POST"},
    ) as resp:
        assert resp.status == 204
        assert resp.headers["Access-Control-Allow-Origin"] == SHOP_ORIGIN
        assert "Authorization" in resp.headers["Access-Control-Allow-Headers"]
    # a preflight carries the query of the request it asks about: that request's to check
    async with web.http.options(
        web.server.make_url("/widget/v1/history?after=3&limit=50"),
        headers={"Origin": SHOP_ORIGIN, "Access-Control-Request-Method": "GET"},
    ) as resp:
        assert resp.status == 204
        assert resp.headers["Access-Control-Allow-Origin"] == SHOP_ORIGIN


async def test_unknown_roles_and_sites_are_named(web: Web) -> None:
    status, answer, _ = await web.widget().call("POST", "/sessions", {"role": "nobody"})
    assert status == 404 and answer["error"]["code"] == "unknown_role"
    status, answer, _ = await web.widget().call(
        "POST", "/sessions", {"role": "echo", "site": "nowhere"}
    )
    assert status == 404 and answer["error"]["code"] == "unknown_site"


async def test_a_visitor_who_signs_in_to_an_existing_conversation_finds_theirs_behind_it(
    web: Web,
) -> None:
    known = web.widget(SHOP_ORIGIN)
    await known.start(site="shop", user_token=user_token("u-8", "Di"))
    await known.say("said while signed in, long ago")

    visitor = web.widget(SHOP_ORIGIN)
    anonymous = await visitor.start(site="shop")
    await visitor.say("said anonymously")
    signed = await visitor.start(
        site="shop", user_token=user_token("u-8", "Di"), visitor_token=anonymous["visitor_token"]
    )
    assert signed["conversation"] != anonymous["conversation"]

    page = await visitor.history()
    assert "said while signed in, long ago" in [e.get("text") for e in page["events"]]
    assert page["earlier"] and page["predecessor"] == anonymous["conversation"]
    earlier = await visitor.history(f"?conversation={page['predecessor']}")
    said = [e for e in earlier["events"] if e["kind"] == "message" and e["mine"]]
    assert [e["text"] for e in said] == ["said anonymously"]
    assert earlier["predecessor"] is None and not earlier["more"]

    stranger = web.widget(SHOP_ORIGIN)
    await stranger.start(site="shop", user_token=user_token("u-9", "Ed"))
    status, answer, _ = await stranger.call(
        "GET", f"/history?conversation={anonymous['conversation']}"
    )
    assert status == 404 and answer["error"]["code"] == "unknown_conversation"


async def test_link_code_guesses_and_new_visitors_are_rate_limited(web: Web) -> None:
    widget = web.widget()
    await widget.start()
    statuses = [
        (await widget.call("POST", "/link", {"code": f"ABCD-EF{n:02d}"}))[0] for n in range(12)
    ]
    assert statuses[:10] == [404] * 10 and statuses[10:] == [429, 429]
    made = [(await web.widget().call("POST", "/sessions", {"role": "echo"}))[0] for _ in range(11)]
    assert 429 in made  # one address: a burst of new visitors, then the rate
