"""`widget.js` as the gateway serves it: read and compressed once, named by its content.

The script has two URLs (docs/widget.md, "The script's URLs and caching"):

- `/widget.js?v=<version>`, where `version` is a hash of the script's content: what that URL
  answers never changes, so browsers and proxies keep it for a year (`immutable`);
- `/widget.js`: the script of the running gateway, revalidated on every use (`no-cache` with an
  `ETag`, a `304` while it is unchanged), so pages that embed it get a new gateway's script.

A `v` that is not the running script's version gets the running script too, cached like the plain
URL: a page that names an older version is not left without a widget, nor is the current script
kept for a year under a name that is not its own. Each answer is gzip-compressed when the request
accepts gzip (`Vary: Accept-Encoding`).
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

STATIC = Path(__file__).parent / "static"
LONG_CACHE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


@dataclass(frozen=True, slots=True, kw_only=True)
class WidgetScript:
    """The script's bytes, plain and gzip-compressed, and the version naming them."""

    plain: bytes
    compressed: bytes
    version: str

    def etag(self, *, compressed: bool) -> str:
        return f'"{self.version}.gz"' if compressed else f'"{self.version}"'

    def matches(self, if_none_match: str | None) -> bool:
        """Whether the browser's copy (`If-None-Match`) is this script, in either encoding."""
        if not if_none_match:
            return False
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or bool(tags & {self.etag(compressed=False), self.etag(compressed=True)})


@cache
def load_widget_script() -> WidgetScript:
    """The script shipped with this gateway (read once; the file does not change while it runs)."""
    plain = (STATIC / "widget.js").read_bytes()
    return WidgetScript(
        plain=plain,
        compressed=gzip.compress(plain, compresslevel=9, mtime=0),
        version=hashlib.sha256(plain).hexdigest()[:16],
    )


def widget_src(base_url: str) -> str:
    """The script's versioned URL on the gateway at `base_url`."""
    return f"{base_url.rstrip('/')}/widget.js?v={load_widget_script().version}"


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an `Accept-Encoding` value takes gzip (`gzip` or `*`, with no `q=0`)."""
    for part in accept_encoding.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() not in ("gzip", "x-gzip", "*"):
            continue
        quality = params.strip().lower().removeprefix("q=").strip() if params else "1"
        try:
            return float(quality) > 0
        except ValueError:
            return False
    return False
