"""Sites that embed the widget: whose secret signs their users' tokens, which page origins may
use it. The site `default` always exists (anonymous visitors only, unless configured), and the
gateway's own origin is allowed for every site (the demo page).

A page of an origin its site does not allow is refused (403 `origin_not_allowed`), and told so
in a way its script can read: the refusal carries CORS headers for that origin (the routes), so
the widget can say what the operator should do instead of "the chat cannot be reached". The
operator hears of it once per origin and site (`RefusedOrigins`), at warning level.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from channels.edge.errors import ApiError

log = logging.getLogger("rolecall.web")

DEFAULT_SITE = "default"
REFUSED_KEPT = 1_000
"""Refused origins remembered (so each is logged once); a client may name any origin it likes,
so past this many the rest are not logged one by one."""
ORIGIN_SHOWN = 200
"""Characters of a refused origin that the log and the error repeat."""


@dataclass(frozen=True, slots=True)
class Site:
    """A site that embeds the widget: the secret that signs its users' tokens (None: anonymous
    visitors only) and the page origins allowed to use the widget for it."""

    name: str
    secret: str | None
    origins: frozenset[str]


class Sites:
    def __init__(self, configured: Iterable[Site], *, own_origin: str) -> None:
        own = _loopback_aliases(own_origin)
        self._sites = {
            site.name: Site(site.name, site.secret, site.origins | own) for site in configured
        }
        self._sites.setdefault(DEFAULT_SITE, Site(DEFAULT_SITE, None, own))
        self._any_origin = frozenset().union(*(site.origins for site in self._sites.values()))

    def get(self, name: object) -> Site:
        if name is None:
            name = DEFAULT_SITE
        site = self._sites.get(name) if isinstance(name, str) else None
        if site is None:
            raise ApiError(404, "unknown_site", f"no site named {name!r} is configured here")
        return site

    def allows_somewhere(self, origin: str) -> bool:
        """Whether some site allows pages of this origin (CORS preflights name no site)."""
        return origin in self._any_origin


def _loopback_aliases(origin: str) -> frozenset[str]:
    """The gateway's own origin, and on a loopback address its other names too (a newcomer may
    open http://localhost:8080 as well as http://127.0.0.1:8080)."""
    scheme, _, rest = origin.partition("://")
    host, _, port = rest.rpartition(":")
    loopback = ("127.0.0.1", "localhost", "[::1]")
    if host not in loopback or not port.isdigit():
        return frozenset({origin})
    return frozenset(f"{scheme}://{name}:{port}" for name in loopback)


def check_origin(origin: str | None, site: Site) -> None:
    """A browser's request must come from a page the site allows. Requests without `Origin`
    (not from a browser page, or a same-origin `GET`) pass: the header is a browser's promise,
    not a credential."""
    if origin is not None and origin not in site.origins:
        shown = origin[:ORIGIN_SHOWN]
        raise ApiError(
            403,
            "origin_not_allowed",
            f"pages of {shown} may not use the widget for site {site.name!r}: the operator "
            f"allows them by adding {shown} to the origins of site {site.name!r} in "
            "ROLECALL_SITES",
        )


class RefusedOrigins:
    """The page origins refused so far, by site: the first refusal of each is logged at warning
    level, with what allows it; a page that retries, or the many visitors of one page, add
    nothing to the log."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._full = False

    def note(self, origin: str, site: Site) -> None:
        key = (origin, site.name)
        if key in self._seen:
            return
        if len(self._seen) >= REFUSED_KEPT:
            if not self._full:
                self._full = True
                log.warning(
                    "widget: %d page origins refused so far; further ones are not logged",
                    len(self._seen),
                )
            return
        self._seen.add(key)
        shown = origin[:ORIGIN_SHOWN]
        log.warning(
            "widget: refused pages of %s (site %r): to allow them, add %s to the origins of "
            "site %r in ROLECALL_SITES",
            shown,
            site.name,
            shown,
            site.name,
        )
