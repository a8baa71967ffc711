"""A shop of our own: a second web site, on another origin, that embeds the widget.

Like a real host site it knows its signed-in user and signs a short-lived user token for them
with the site secret (HS256, PyJWT) on every page view. Its page also carries hostile CSS (every
button hidden, every element red and huge), which the widget's Shadow DOM must shrug off.

    GET /page?role=echo&user=ann&name=Ann+Example     the widget for `echo`, signed in as `ann`
    GET /page?role=echo                               the widget for an anonymous visitor
    GET /page?role=echo&user=ann&name=Ann&expired=1   a user token that expired a minute ago
    GET /page?role=echo&gateway=http://127.0.0.1:9999 the widget from another address
"""

from __future__ import annotations

import html
import time

import jwt
from aiohttp import web

SITE = "shop"
SITE_SECRET = "shop-secret-for-browser-tests-0123456789"

HOSTILE_CSS = """
  * { color: red !important; font-size: 40px !important; }
  button, textarea, ol, li, p, section, header { display: none !important; }
  div { position: static !important; transform: scale(.5); }
"""


def user_token(user: str, name: str, *, lifetime: float = 600.0, secret: str = SITE_SECRET) -> str:
    now = time.time()
    claims = {"sub": user, "name": name, "iat": int(now), "exp": int(now + lifetime)}
    return jwt.encode(claims, secret, algorithm="HS256")


def page_app(gateway_url: str) -> web.Application:
    async def page(request: web.Request) -> web.Response:
        query = request.query
        attributes = {
            "src": f"{query.get('gateway', gateway_url)}/widget.js",
            "data-role": query.get("role", "echo"),
            "data-site": SITE,
            "data-open": "true",
        }
        if user := query.get("user"):
            lifetime = -60.0 if query.get("expired") else 600.0
            attributes["data-user-token"] = user_token(
                user, query.get("name", user), lifetime=lifetime
            )
        tag = " ".join(f'{name}="{html.escape(value)}"' for name, value in attributes.items())
        body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The shop</title><style>{HOSTILE_CSS}</style></head>
<body><h1>The shop</h1><p>Our products.</p><button>Buy</button>
<script {tag} async></script>
</body></html>"""
        return web.Response(text=body, content_type="text/html")

    app = web.Application()
    app.router.add_get("/page", page)
    return app
