"""The console's HTML: Jinja2 templates (autoescaped, strict about undefined names), its two
static files, and the headers every console answer carries.

Nothing is loaded from another host and nothing is built: `templates/` and `static/` ship in the
package, the CSS and the script are hand-written, and the Content-Security-Policy allows only
the gateway's own scripts, styles and connections (`HEADERS`). Pages are not cached (they show
live figures and carry the CSRF token); the static files are revalidated by their ETag.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined

HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

ENVIRONMENT = Environment(
    loader=PackageLoader("gateway.console", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def when(at: str) -> str:
    """An RFC 3339 time of the API (`2026-11-30T08:24:04.317653Z`) as a person reads it."""
    day, _, clock = at.partition("T")
    return f"{day} {clock[:8]} UTC" if clock else at


ENVIRONMENT.filters["when"] = when


def harden(response: web.StreamResponse, *, cache: bool = False) -> web.StreamResponse:
    """`response` with the console's security headers (and `no-store` unless `cache`)."""
    response.headers.update(HEADERS)
    if not cache:
        response.headers["Cache-Control"] = "no-store"
    return response


def render(template: str, *, status: int = 200, **context: Any) -> web.Response:
    """The page `template` filled in with `context`, as an answer."""
    html = ENVIRONMENT.get_template(template).render(**context)
    response = web.Response(text=html, status=status, content_type="text/html", charset="utf-8")
    harden(response)
    return response


def fragment(template: str, macro: str, *args: Any) -> str:
    """The HTML of one macro of a template (an event as the live stream sends it)."""
    rendered: str = getattr(ENVIRONMENT.get_template(template).module, macro)(*args)
    return str(rendered)


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


_TYPES = {".css": "text/css", ".js": "text/javascript"}


def _assets() -> dict[str, Asset]:
    found: dict[str, Asset] = {}
    for item in resources.files("gateway.console").joinpath("static").iterdir():
        suffix = "." + item.name.rpartition(".")[2]
        if item.is_file() and suffix in _TYPES:
            body = item.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            found[item.name] = Asset(body, _TYPES[suffix], etag)
    return found


ASSETS = _assets()


async def static(request: web.Request) -> web.StreamResponse:
    """`GET /console/static/{name}`: open (the login page needs its style)."""
    asset = ASSETS.get(request.match_info["name"])
    if asset is None:
        return harden(web.Response(status=404, text="no such file", content_type="text/plain"))
    if request.headers.get("If-None-Match") == asset.etag:
        response = web.Response(status=304)
    else:
        response = web.Response(body=asset.body, content_type=asset.content_type, charset="utf-8")
    response.headers["ETag"] = asset.etag
    response.headers["Cache-Control"] = "no-cache"
    return harden(response, cache=True)
