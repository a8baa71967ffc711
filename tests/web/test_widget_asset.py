"""`widget.js` as browsers fetch it (docs/widget.md, "The script's URLs and caching").

- Compressed: gzip when the request accepts it, the same bytes as the file once inflated; plain
  otherwise (`Vary: Accept-Encoding` either way).
- `/widget.js?v=<version>` with the running script's version is cached for a year, `immutable`;
  plain `/widget.js` is revalidated (`no-cache`) and answers 304 to its own `ETag`; a version that
  is not the running one gets the running script, revalidated like the plain URL.
- The demo page and the `serve` banner embed the versioned URL.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

from channels.web.asset import STATIC, accepts_gzip, load_widget_script
from gateway.cli.commands.serve import banner
from gateway.settings import Settings
from tests.api.conftest import ECHO
from tests.web.conftest import Web

SOURCE = (STATIC / "widget.js").read_bytes()
VERSION = hashlib.sha256(SOURCE).hexdigest()[:16]


async def test_the_script_is_gzip_compressed_for_a_browser_that_accepts_it(web: Web) -> None:
    """The compressed body inflates to the file; it is much smaller; no gzip asked, none given."""
    url = web.server.make_url("/widget.js")
    async with web.http.get(
        url, headers={"Accept-Encoding": "gzip, br"}, auto_decompress=False
    ) as r:
        assert r.status == 200
        assert r.headers["Content-Encoding"] == "gzip"
        assert r.headers["Content-Type"] == "application/javascript; charset=utf-8"
        assert r.headers["Vary"] == "Accept-Encoding"
        assert r.headers["Access-Control-Allow-Origin"] == "*"
        body = await r.read()
    assert gzip.decompress(body) == SOURCE
    assert len(body) < len(SOURCE) / 3
    async with web.http.get(url, headers={"Accept-Encoding": "identity"}) as r:
        assert r.status == 200
        assert "Content-Encoding" not in r.headers
        assert await r.read() == SOURCE


async def test_the_versioned_url_is_cached_for_a_year_and_the_plain_one_is_revalidated(
    web: Web,
) -> None:
    """`?v=` the running version: a year, immutable. Plain: no-cache, its ETag answered 304
    (with gzip and without: each encoding has its own tag, either validates). An older version
    gets today's script, revalidated."""
    assert load_widget_script().version == VERSION
    pinned = web.server.make_url(f"/widget.js?v={VERSION}")
    async with web.http.get(pinned) as r:
        assert r.status == 200
        assert r.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert await r.read() == SOURCE

    plain = web.server.make_url("/widget.js")
    async with web.http.get(plain, headers={"Accept-Encoding": "gzip"}) as r:
        assert r.headers["Cache-Control"] == "no-cache"
        etag = r.headers["ETag"]
        assert etag == f'"{VERSION}.gz"'
    async with web.http.get(plain, headers={"If-None-Match": etag, "Accept-Encoding": "br"}) as r:
        assert r.status == 304
        assert r.headers["ETag"] == f'"{VERSION}"'
        assert await r.read() == b""
    async with web.http.get(plain, headers={"If-None-Match": '"someone-else"'}) as r:
        assert r.status == 200
        assert await r.read() == SOURCE

    old = web.server.make_url("/widget.js?v=0123456789abcdef")
    async with web.http.get(old) as r:
        assert r.status == 200
        assert r.headers["Cache-Control"] == "no-cache"
        assert await r.read() == SOURCE

    async with web.http.get(web.server.make_url("/widget.js?x=1")) as r:
        assert r.status == 422
        assert (await r.json())["error"]["code"] == "unknown_parameter"


async def test_the_demo_page_and_the_banner_embed_the_versioned_url(
    web: Web, tmp_path: Path
) -> None:
    """The page shows the snippet a site pastes — the plain URL at the gateway's own address,
    which follows upgrades — and loads its own widget by the versioned path (the page and the
    script change together); `serve` prints the same snippet."""
    async with web.http.get(web.server.make_url("/")) as r:
        page = await r.text()
    assert f'<script src="/widget.js?v={VERSION}" data-role="concierge"' in page
    assert re.search(r'&lt;script src="http://127\.0\.0\.1:\d+/widget\.js" data-role', page)
    assert page.count(f"/widget.js?v={VERSION}") == 1  # its own tag only
    settings = Settings(host="127.0.0.1", port=9000, var_dir=tmp_path / "var")
    lines = banner(settings, {"echo": ECHO}, None)
    expected = '<script src="http://127.0.0.1:9000/widget.js" data-role="echo" async>'
    assert any(expected in line for line in lines), lines


def test_accept_encoding_is_read_with_its_weights() -> None:
    """gzip, x-gzip and * count unless their weight is 0."""
    assert accepts_gzip("gzip")
    assert accepts_gzip("br;q=1.0, gzip;q=0.8")
    assert accepts_gzip("*")
    assert not accepts_gzip("")
    assert not accepts_gzip("br, deflate")
    assert not accepts_gzip("gzip;q=0")
