"""What the browser tests share besides fixtures: the gateway they start, the widget as a person
finds it on a page, and where screenshots go.

`Gateway` is the whole application (`build_app`) on a port of its own over a SQLite file of the
test's own. It can stop and start again at the same address, on the same file, and be stood in
for by a second instance on another port while it is down; its helpers speak the operator API
and the widget API as another system would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer
from playwright.async_api import Dialog, Locator, Page

from core.model.roles import Role
from gateway.app import build_app
from gateway.settings import Settings
from tests.browser.host_page import SITE, user_token
from tests.serving import serve

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "test-results"
TOKEN = "browser-tests-operator-token-0123456789"

ROLES = {
    "concierge": Role.model_validate(
        {
            "name": "concierge",
            "display_name": "Concierge",
            "runtime": {"kind": "builtin", "agent": "concierge"},
        }
    ),
    "echo": Role.model_validate(
        {"name": "echo", "display_name": "Echo", "runtime": {"kind": "builtin", "agent": "echo"}}
    ),
    "slow": Role.model_validate(
        {
            "name": "slow",
            "display_name": "Slow",
            "runtime": {"kind": "builtin", "agent": "echo", "delay_ms": 2000},
        }
    ),
}
"""`concierge` is the demo role's agent; `echo` repeats each person message at once; `slow` does
the same two seconds later (long enough to see "working…")."""


@dataclass
class Gateway:
    settings: Settings
    http: aiohttp.ClientSession
    shop_origin: str
    roles: Mapping[str, Role] = field(default_factory=lambda: ROLES)
    secrets: Mapping[str, str] = field(default_factory=dict)
    server: TestServer | None = None
    _serving: contextlib.AsyncExitStack | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return self.settings.base_url

    async def start(self, port: int | None = None) -> None:
        """Serve on the gateway's own port, or (a stand-in while it is down) on another one."""
        assert self.server is None, "already running"
        app = build_app(
            self.settings, api_token=TOKEN, roles=dict(self.roles), secrets=dict(self.secrets)
        )
        serving = contextlib.AsyncExitStack()
        self.server = await serving.enter_async_context(serve(app, port=port or self.settings.port))
        self._serving = serving

    async def stop(self) -> None:
        assert self._serving is not None, "not running"
        serving, self._serving, self.server = self._serving, None, None
        await serving.aclose()

    async def call(
        self, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """A request to whichever instance runs now: the status and the JSON body."""
        assert self.server is not None, "not running"
        sent = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
        url = self.server.make_url(path)
        async with self.http.request(method, url, json=body, headers=sent) as response:
            return response.status, await response.json()

    async def widget_session(self, role: str, user: str, name: str) -> dict[str, Any]:
        """A widget session for the shop's signed-in user, opened as the shop's page would."""
        body = {"role": role, "site": SITE, "user_token": user_token(user, name)}
        status, answer = await self.call(
            "POST", "/widget/v1/sessions", body, headers={"Origin": self.shop_origin}
        )
        assert status == 200, answer
        return dict(answer)

    async def say(self, thread: str, author: str, text: str) -> dict[str, Any]:
        """Post as another channel would: through the operator API."""
        status, event = await self.call(
            "POST", f"/api/v1/threads/{thread}/messages", {"author": author, "text": text}
        )
        assert status == 201, event
        return dict(event)

    async def retract(self, thread: str, message_id: str, author: str) -> None:
        status, event = await self.call(
            "POST", f"/api/v1/threads/{thread}/messages/{message_id}/retract", {"author": author}
        )
        assert status == 201, event

    async def messages(self, thread: str, viewer: str) -> list[dict[str, Any]]:
        """Every message of the thread the viewer sees (archived ones too), oldest first."""
        query = f"as={viewer}&include_archived=true&limit=500"
        status, page = await self.call("GET", f"/api/v1/threads/{thread}/timeline?{query}")
        assert status == 200, page
        return [event for event in page["events"] if event["kind"] == "message"]


@dataclass
class Relay:
    """A TCP relay in front of the gateway, for cutting the browser's connections the way a
    network failure does: `cut()` aborts every connection through it (both sides see a reset
    mid-stream); while `down`, new connections are closed at once, as if the network were gone.
    The gateway itself notices nothing but closed sockets."""

    upstream_port: int
    down: bool = False
    port: int = 0
    _server: asyncio.Server | None = None
    _open: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:  # the gateway is down: so is this connection
            writer.transport.abort()
            return
        self._open.update((writer, up_writer))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for side in (writer, up_writer):
                self._open.discard(side)
                side.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    with contextlib.suppress(OSError):
        writer.write_eof()


@dataclass
class Troubles:
    """What must not happen on any page of a test: an uncaught script error, a dialog."""

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        page.on("pageerror", lambda error: self.errors.append(str(error)))

        async def dismiss(dialog: Dialog) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            await dialog.dismiss()

        page.on("dialog", dismiss)


OpenPage = Callable[..., Awaitable[Page]]
"""`await open_page(url, **context_options)`: a page at `url`, in a context of its own."""


class Widget:
    """The widget on a page, found as a person or a screen reader finds it: by role and name.
    (Playwright's locators reach into the open Shadow DOM.)"""

    def __init__(self, page: Page, role_name: str) -> None:
        self.page = page
        self.launcher = page.get_by_role("button", name=f"Chat with {role_name}")
        self.panel = page.get_by_role("region", name=f"Chat with {role_name}")
        self.log = page.get_by_role("log")
        self.textbox = page.get_by_role("textbox", name=f"Message {role_name}")
        self.send_button = page.get_by_role("button", name="Send")
        self.start_fresh = page.get_by_role("button", name="Start fresh")
        self.show_earlier = page.get_by_role("button", name="Show earlier")
        self.close = page.get_by_role("button", name="Close chat")
        self.status = page.get_by_role("status")
        self.messages = self.log.locator("li.message:visible")
        self.texts = self.messages.locator(".text")
        self.notices = self.log.locator("li.notice:visible")
        self.working = page.locator("rolecall-widget .working")
        self.error = page.locator("rolecall-widget .error")

    async def send(self, text: str) -> None:
        """Type and press Enter, as a person does."""
        await self.textbox.fill(text)
        await self.textbox.press("Enter")

    def message(self, text: str) -> Locator:
        """The shown messages whose text is exactly this."""
        return self.messages.filter(has=self.page.locator(".text").get_by_text(text, exact=True))

    async def shown_seqs(self) -> list[int]:
        """The seq of every message shown, top to bottom."""
        seqs = await self.messages.evaluate_all("items => items.map(item => item.dataset.seq)")
        return [int(seq) for seq in seqs]


def save_screenshot(png: bytes, tmp_path: Path, name: str) -> None:
    """Under the test's output folder, and in test-results/ of the checkout to look at."""
    (tmp_path / name).write_bytes(png)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_bytes(png)
