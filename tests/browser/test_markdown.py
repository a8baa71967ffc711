"""Messages render a safe part of Markdown: bold, italics, code and code blocks, lists, quotes,
links that open in a new tab with rel=noopener, bare addresses. Nothing in a message becomes
HTML: raw HTML stays text, a `javascript:` (or any non-http) link stays the text it was
written as, and an image is a link to it, never loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import expect

from tests.browser.harness import Gateway, OpenPage, Troubles, Widget, save_screenshot

ANN = "/page?role=echo&user=ann-1&name=Ann+Example"

RICH = """**Opening hours** are *9 to 5*, ~~weekends~~ and `Mon <b>-</b> Fri`:

- the front desk, see [our page](https://example.com/desk_hours?a=1&b=2)
- the _help line_, at https://example.com/help.
  - nested under it
1. first
2. second

> a quote

```python
print("<b>not bold</b>")  # **not bold either**
```
snake_case_name and 2 * 3 * 4 stay as they are"""


async def _conversation(gateway: Gateway) -> tuple[str, str]:
    session = await gateway.widget_session("echo", "ann-1", "Ann Example")
    return session["conversation"], f"person:{session['person']['slug']}"


async def test_a_roles_markdown_is_rendered_as_elements(
    gateway: Gateway, shop: str, open_page: OpenPage, tmp_path: Path
) -> None:
    """Each construct of the safe part becomes its element, with the text inside as written."""
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    await expect(widget.textbox).to_be_visible()
    conversation, _ = await _conversation(gateway)
    await gateway.say(conversation, "role:echo", RICH)
    text = widget.texts.last
    await expect(text.locator("strong").first).to_have_text("Opening hours")
    await expect(text.locator("em").first).to_have_text("9 to 5")
    await expect(text.locator("del")).to_have_text("weekends")
    await expect(text.locator("p code")).to_have_text("Mon <b>-</b> Fri")
    await expect(text.locator(":scope > ul > li")).to_have_count(2)
    await expect(text.locator("ul ul > li")).to_have_text(["nested under it"])
    await expect(text.locator("ol > li")).to_have_text(["first", "second"])
    await expect(text.locator("blockquote")).to_have_text("a quote")
    await expect(text.locator("pre code")).to_have_text(
        'print("<b>not bold</b>")  # **not bold either**'
    )
    await expect(text.locator("li em")).to_have_text("help line")
    await expect(text).to_contain_text("snake_case_name and 2 * 3 * 4 stay as they are")

    links = text.locator("a")
    await expect(links).to_have_count(2)
    hrefs = await links.evaluate_all("links => links.map(link => link.getAttribute('href'))")
    assert hrefs == ["https://example.com/desk_hours?a=1&b=2", "https://example.com/help"]
    await expect(links.first).to_have_text("our page")
    await expect(links.nth(1)).to_have_text("https://example.com/help")  # without the "."
    for n in range(2):
        await expect(links.nth(n)).to_have_attribute("target", "_blank")
        rel = await links.nth(n).get_attribute("rel")
        assert rel is not None and "noopener" in rel.split()
    await expect(page.locator("rolecall-widget b, rolecall-widget img")).to_have_count(0)
    save_screenshot(await widget.panel.screenshot(), tmp_path, "widget-markdown.png")


async def test_a_link_opens_in_a_new_tab_that_cannot_reach_the_page(
    gateway: Gateway, shop: str, open_page: OpenPage
) -> None:
    """Following a link opens a new tab, and that tab has no `window.opener` back to the page."""
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    await expect(widget.textbox).to_be_visible()
    conversation, _ = await _conversation(gateway)
    await gateway.say(conversation, "role:echo", f"the [script]({gateway.url}/widget.js)")
    async with page.context.expect_page() as opened:
        await widget.texts.last.get_by_role("link", name="script").click()
    tab = await opened.value
    await tab.wait_for_load_state()
    assert tab.url == f"{gateway.url}/widget.js"
    assert await tab.evaluate("window.opener") is None
    assert page.url.startswith(shop)  # the page itself stayed


HOSTILE = [
    "[click me](javascript:alert(1))",
    "[click me](JavaScript:alert(2))",
    "[click me]( javascript:alert(3) )",
    "[data](data:text/html,<script>alert(4)</script>)",
    "[relative](/widget/v1/history)",
    "[vb](vbscript:msgbox(5))",
    "![tracker](https://example.com/pixel.png)",
    "![x](javascript:alert(6))",
    "**<img src=x onerror=alert(7)>**",
    '<a href="javascript:alert(8)">html link</a>',
    "[<img src=x onerror=alert(9)>](https://example.com/ok)",
    "<script>alert(10)</script>",
    "`<iframe src=javascript:alert(11)>`",
    "```\n<svg onload=alert(12)>\n```",
    'https://example.com/"onmouseover=alert(13)',
]


async def test_markdown_cannot_make_html_scripts_images_or_unsafe_links(
    gateway: Gateway, shop: str, open_page: OpenPage, troubles: Troubles
) -> None:
    """Every hostile message shows its text; the only elements made are the safe ones, every
    link goes to an absolute http(s) address, and no script runs (no dialog, no error)."""
    page = await open_page(shop + ANN)
    widget = Widget(page, "Echo")
    await expect(widget.textbox).to_be_visible()
    conversation, _ = await _conversation(gateway)
    for text in HOSTILE:
        await gateway.say(conversation, "role:echo", text)
    await expect(widget.texts).to_have_count(len(HOSTILE))
    await page.reload()  # from history too
    await expect(widget.texts).to_have_count(len(HOSTILE))

    texts = widget.texts
    for n in range(6):  # not links: shown exactly as written
        await expect(texts.nth(n)).to_have_text(HOSTILE[n])
    await expect(texts.nth(6).locator("a")).to_have_text("tracker")  # an image is a link to it
    await expect(texts.nth(7)).to_have_text(HOSTILE[7])
    await expect(texts.nth(8).locator("strong")).to_have_text("<img src=x onerror=alert(7)>")
    await expect(texts.nth(9)).to_have_text(HOSTILE[9])
    await expect(texts.nth(10).locator("a")).to_have_text("<img src=x onerror=alert(9)>")
    await expect(texts.nth(11)).to_have_text(HOSTILE[11])
    await expect(texts.nth(12).locator("code")).to_have_text("<iframe src=javascript:alert(11)>")
    await expect(texts.nth(13).locator("pre")).to_have_text("<svg onload=alert(12)>")
    await expect(texts.nth(14).locator("a")).to_have_attribute("href", "https://example.com/")

    made: list[str] = await page.locator("rolecall-widget .text *").evaluate_all(
        "nodes => [...new Set(nodes.map(node => node.localName))].sort()"
    )
    assert set(made) <= {"a", "code", "del", "em", "li", "ol", "p", "pre", "strong", "ul"}, made
    links: list[dict[str, Any]] = await page.locator("rolecall-widget .text a").evaluate_all(
        "links => links.map(link => ({href: link.getAttribute('href'), rel: link.rel,"
        " attributes: link.getAttributeNames().sort()}))"
    )
    assert len(links) == 3
    for found in links:
        assert found["href"].startswith("https://example.com/"), found
        assert set(found["attributes"]) <= {"class", "href", "rel", "target"}, found
    handlers = await page.locator("rolecall-widget .text *").evaluate_all(
        "nodes => nodes.flatMap(node => node.getAttributeNames()).filter(n => n.startsWith('on'))"
    )
    assert handlers == []
    assert troubles.dialogs == [] and troubles.errors == []
