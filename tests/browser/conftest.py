"""The real widget in headless Chromium against the real gateway on loopback.

- `gateway`: the whole application on a free port over a SQLite file of the test's own, serving
  `concierge`, `echo` and `slow` (`harness.Gateway`, `harness.ROLES`).
- `shop`: a second site on another origin (`host_page.py`) embedding the widget for its signed-in
  users; the gateway's site `shop` allows that origin, so CORS is really exercised.
- `browser`: the machine's Chromium (/usr/bin/chromium), headless, driven by Playwright. When it
  is missing or cannot start, the tests skip — except when CI is set, where they fail.
- `open_page`: a page in a context of its own (its own localStorage: a browser of its own, as
  far as the widget can tell). An uncaught script error or a dialog on any page fails the test.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect
from playwright.async_api import Error as PlaywrightError

from core.model.roles import Role
from gateway.settings import SiteSettings
from tests.browser.harness import ROLES, Gateway, OpenPage, Troubles
from tests.browser.host_page import SITE, SITE_SECRET, page_app
from tests.serving import free_port, serve
from tests.settings import make_settings

CHROMIUM = Path("/usr/bin/chromium")

# How long the widget may take to show something. Generous: a test fails only when it never does.
expect.set_options(timeout=10_000)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture
def shop_port() -> int:
    return free_port()


@pytest.fixture
def gateway_options() -> dict[str, Any]:
    """More settings for the test's gateway; a test module overrides this fixture to set some."""
    return {}


@pytest.fixture
def gateway_roles() -> Mapping[str, Role]:
    """The roles the test's gateway serves; a test module overrides this fixture to change them."""
    return ROLES


@pytest.fixture
def gateway_secrets() -> Mapping[str, str]:
    """The settings holding secrets that the roles' manifests name."""
    return {}


@pytest.fixture
async def gateway(
    tmp_path: Path,
    shop_port: int,
    gateway_options: dict[str, Any],
    gateway_roles: Mapping[str, Role],
    gateway_secrets: Mapping[str, str],
) -> AsyncIterator[Gateway]:
    port = free_port()
    shop_origin = f"http://127.0.0.1:{shop_port}"
    settings = make_settings(
        tmp_path,
        var_dir=tmp_path / "var",
        host="127.0.0.1",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        sites={
            SITE: SiteSettings.model_validate({"secret": SITE_SECRET, "origins": [shop_origin]})
        },
        **gateway_options,
    )
    async with aiohttp.ClientSession() as http:
        running = Gateway(settings, http, shop_origin, gateway_roles, gateway_secrets)
        await running.start()
        try:
            yield running
        finally:
            if running.server is not None:
                await running.stop()


@pytest.fixture
async def shop(gateway: Gateway, shop_port: int) -> AsyncIterator[str]:
    """The shop's base URL; its pages embed the widget from `gateway`."""
    async with serve(page_app(gateway.url), port=shop_port):
        yield gateway.shop_origin


def _unavailable(reason: str) -> None:
    if in_ci():
        pytest.fail(f"Chromium is required in CI: {reason}", pytrace=False)
    pytest.skip(f"Chromium not available: {reason}")


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} does not exist (apt-get install chromium)")
    return CHROMIUM


@pytest.fixture
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        try:
            launched = await playwright.chromium.launch(
                executable_path=str(chromium),
                headless=True,
                args=["--no-sandbox", "--disable-dev-shm-usage"],
            )
        except PlaywrightError as exc:
            _unavailable(f"Playwright cannot launch {chromium}: {exc.message.splitlines()[0]}")
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
def troubles() -> Troubles:
    return Troubles()


@pytest.fixture
async def open_page(browser: Browser, troubles: Troubles) -> AsyncIterator[OpenPage]:
    """`await open_page(url, **context_options)`: a page at `url`, in a fresh context."""
    contexts: list[BrowserContext] = []

    async def opened(url: str, **options: Any) -> Page:
        context = await browser.new_context(**options)
        contexts.append(context)
        page = await context.new_page()
        troubles.watch(page)
        await page.goto(url)
        return page

    yield opened
    for context in contexts:
        await context.close()
    assert troubles.errors == [], "uncaught script errors on a page"
    assert troubles.dialogs == [], "a dialog opened on a page"
