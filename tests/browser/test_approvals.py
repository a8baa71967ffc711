"""An approval in the real widget (docs/widget.md, "Approvals"): the role's request appears live
as a card — the question, the details, the tool call folded, a button per option, the expiry —
and a click (or Enter) answers it; the card then shows the outcome. An answer given elsewhere
(another browser, another channel) reaches every open card live, without a reload; an answer
that comes too late shows the gateway's words on the card, and the outcome."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.async_api import Locator, Page, Route, expect

from channels.edge.requests import DATABASE_KEY
from core.model.approvals import ApprovalOption, ApprovalRequest, OptionKind, ToolCallAsked
from core.model.participants import Address
from core.model.timeline import ApprovalRequested, ThreadId
from core.storage.database import Database
from tests.browser.harness import Gateway, OpenPage, Widget, save_screenshot

ANN = "/page?role=slow&user=ann-1&name=Ann+Example"
ROLE = Address("role:slow")
OPTIONS = (
    ApprovalOption(id="allow", label="Allow once", kind=OptionKind.ALLOW_ONCE),
    ApprovalOption(id="always", label="Allow always", kind=OptionKind.ALLOW_ALWAYS),
    ApprovalOption(id="reject", label="Reject", kind=OptionKind.REJECT_ONCE),
)


def _db(gateway: Gateway) -> Database:
    assert gateway.server is not None
    return gateway.server.app[DATABASE_KEY]


async def _ask(gateway: Gateway, conversation: str, title: str) -> ApprovalRequested:
    """The role asks, as its run would."""
    asked = ApprovalRequest(
        title=title,
        description="The web service answers **502** since 10:02; a restart clears it.",
        options=OPTIONS,
        tool=ToolCallAsked(
            name="execute", arguments={"command": "systemctl restart web", "host": "web-1"}
        ),
        approvers=(),
        expires_at=datetime.now(UTC) + timedelta(minutes=10),
    )
    return await _db(gateway).approvals.request(ThreadId(conversation), "run1", ROLE, asked)


async def _ready(page: Page) -> Widget:
    """The widget on the page, its conversation loaded (and so its stream opening)."""
    widget = Widget(page, "Slow")
    await expect(page.locator("rolecall-widget .welcome")).to_be_visible()
    return widget


def _card(page: Page, title: str) -> Locator:
    return page.get_by_role("group", name=f"Approval request from Slow: {title}")


class Held:
    """The page's answers to approvals held on their way until `release()`."""

    def __init__(self) -> None:
        self.seen = asyncio.Event()
        self._go = asyncio.Event()

    async def route(self, route: Route) -> None:
        self.seen.set()
        await self._go.wait()
        await route.continue_()

    def release(self) -> None:
        self._go.set()


async def test_a_request_appears_live_as_a_card_and_a_click_answers_it(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    session = await gateway.widget_session("slow", "ann-1", "Ann Example")
    page = await open_page(shop + ANN, viewport={"width": 1000, "height": 900})
    widget = await _ready(page)
    held = Held()
    await page.route("**/widget/v1/approvals/**", held.route)

    asked = await _ask(gateway, session["conversation"], "Restart the web service?")
    card = _card(page, "Restart the web service?")
    await expect(card).to_be_visible()  # live: no reload
    await expect(card).to_contain_text("Slow")
    await expect(card).to_contain_text("asks for approval")
    await expect(card.locator(".approval-description strong")).to_have_text("502")
    buttons = card.get_by_role("button")
    await expect(buttons).to_have_text(["Allow once", "Allow always", "Reject"])
    await expect(card).to_contain_text("Expires at ")
    arguments = card.get_by_label("Arguments")
    await expect(arguments).to_be_hidden()  # folded
    await card.get_by_text("Details", exact=True).click()
    await expect(arguments).to_be_visible()
    await expect(card.locator(".approval-details")).to_contain_text("Tool: execute")
    await expect(arguments).to_contain_text('"command": "systemctl restart web"')
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-approval-card.png")

    allow = card.get_by_role("button", name="Allow once")
    await allow.focus()
    await page.keyboard.press("Enter")  # a real button: the keyboard answers too
    await held.seen.wait()
    for button in await buttons.all():
        await expect(button).to_be_disabled()  # while the answer is on its way
    held.release()

    outcome = card.locator(".approval-outcome")
    await expect(outcome).to_have_text("✓Allowed once by you")
    await expect(outcome).to_be_focused()  # focus was on a button that is gone
    await expect(card.get_by_role("button")).to_have_count(0)
    await expect(card.locator(".approval-expiry")).to_be_hidden()
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-approval-answered.png")
    _, resolution = await _db(gateway).approvals.get(asked.id)
    assert resolution is not None and resolution.option == OPTIONS[0]
    assert resolution.channel == "web"

    await page.reload()  # history shows the request answered
    await expect(_card(page, "Restart the web service?").locator(".approval-outcome")).to_have_text(
        "✓Allowed once by you"
    )


async def test_an_answer_from_elsewhere_reaches_every_open_card_live(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    session = await gateway.widget_session("slow", "ann-1", "Ann Example")
    person = Address(f"person:{session['person']['slug']}")
    here = await open_page(shop + ANN)
    there = await open_page(shop + ANN, color_scheme="dark")  # another browser, dark
    for page in (here, there):
        await _ready(page)

    restart = await _ask(gateway, session["conversation"], "Restart the web service?")
    rollback = await _ask(gateway, session["conversation"], "Roll back release 41?")
    for page in (here, there):
        await expect(_card(page, "Roll back release 41?")).to_be_visible()
    dark = Widget(there, "Slow").panel
    save_screenshot(await dark.screenshot(), tmp_path, "widget-approval-dark-pending.png")

    # One browser answers: the other's card follows, without a reload.
    await _card(here, "Restart the web service?").get_by_role("button", name="Allow always").click()
    for page in (here, there):
        outcome = _card(page, "Restart the web service?").locator(".approval-outcome")
        await expect(outcome).to_have_text("✓Always allowed by you")

    # Another channel answers (Slack, through the gateway's core): both cards follow.
    await _db(gateway).approvals.answer(rollback, person, "reject", channel="slack")
    for page in (here, there):
        outcome = _card(page, "Roll back release 41?").locator(".approval-outcome")
        await expect(outcome).to_have_text("✕Rejected by you in Slack")
        await expect(_card(page, "Roll back release 41?").get_by_role("button")).to_have_count(0)
    save_screenshot(await dark.screenshot(), tmp_path, "widget-approval-dark.png")
    _, resolution = await _db(gateway).approvals.get(restart.id)
    assert resolution is not None and resolution.channel == "web"


async def test_an_answer_that_comes_too_late_shows_why_and_then_the_outcome(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    session = await gateway.widget_session("slow", "ann-1", "Ann Example")
    person = Address(f"person:{session['person']['slug']}")
    page = await open_page(shop + ANN)
    widget = await _ready(page)
    held = Held()
    await page.route("**/widget/v1/approvals/**", held.route)
    asked = await _ask(gateway, session["conversation"], "Restart the web service?")
    card = _card(page, "Restart the web service?")

    await card.get_by_role("button", name="Allow once").click()
    await held.seen.wait()
    # Meanwhile the person answers in Slack: that answer is first.
    await _db(gateway).approvals.answer(asked, person, "reject", channel="slack")
    await expect(card.locator(".approval-outcome")).to_have_text("✕Rejected by you in Slack")
    held.release()
    note = card.locator(".approval-note")
    await expect(note).to_have_text("Already answered by you in Slack: “Reject”.")
    await expect(card.locator(".approval-outcome")).to_have_text("✕Rejected by you in Slack")
    await expect(widget.status).to_have_text(
        "Restart the web service?: Already answered by you in Slack: “Reject”."
    )
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-approval-too-late.png")
    _, resolution = await _db(gateway).approvals.get(asked.id)
    assert resolution is not None and resolution.channel == "slack"
