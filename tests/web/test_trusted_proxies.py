"""Behind a load balancer: the widget's limit on new anonymous visitors counts each visitor's own
address — the one a trusted proxy names in `X-Forwarded-For` — not the balancer's, and a client
cannot pass for another by writing the header itself."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from gateway.app import build_app
from gateway.settings import SettingsError, load_settings
from tests.api.conftest import ECHO, TOKEN
from tests.serving import free_port, serve
from tests.web.conftest import web_settings

BURST = 10


async def _new_visitors(http: aiohttp.ClientSession, url: str, forwarded: str, n: int) -> list[int]:
    made = []
    for _ in range(n):
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        async with http.post(url, json={"role": "echo"}, headers=headers) as answer:
            made.append(answer.status)
    return made


async def test_visitors_behind_a_trusted_proxy_are_counted_by_their_own_address(
    tmp_path: Path,
) -> None:
    port = free_port()
    settings = web_settings(tmp_path, port, trusted_proxies="127.0.0.1")
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO})
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        url = str(server.make_url("/widget/v1/sessions"))
        first = await _new_visitors(http, url, "203.0.113.7", BURST + 1)
        assert first[:BURST] == [200] * BURST and first[BURST] == 429
        # Another visitor behind the same balancer is not held back by the first.
        assert await _new_visitors(http, url, "198.51.100.4", 1) == [200]
        # A client writing its own header: only the hop our proxy appended counts.
        assert await _new_visitors(http, url, "198.51.100.4, 203.0.113.7", 1) == [429]


async def test_without_trusted_proxies_the_header_is_ignored(tmp_path: Path) -> None:
    port = free_port()
    app = build_app(web_settings(tmp_path, port), api_token=TOKEN, roles={"echo": ECHO})
    async with serve(app, port=port) as server, aiohttp.ClientSession() as http:
        url = str(server.make_url("/widget/v1/sessions"))
        made = await _new_visitors(http, url, "", BURST)
        assert made == [200] * BURST
        assert await _new_visitors(http, url, "192.0.2.99", 1) == [429]  # still 127.0.0.1


def test_a_malformed_trusted_proxy_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ROLECALL_TRUSTED_PROXIES", "10.0.0.0/8,not-an-address")
    with pytest.raises(SettingsError, match="ROLECALL_TRUSTED_PROXIES"):
        load_settings()
