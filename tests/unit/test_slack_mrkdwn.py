"""A role's Markdown as Slack mrkdwn (`channels.slack.mrkdwn`): the marks that differ are
rewritten, code is kept as written, Slack's own markup characters are escaped, and text that is
not Markdown goes through unchanged."""

from __future__ import annotations

import pytest

from channels.slack.mrkdwn import to_mrkdwn


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold**", "*bold*"),
        ("__bold__", "*bold*"),
        ("*italics*", "_italics_"),
        ("_italics_", "_italics_"),
        ("***both***", "*_both_*"),
        ("~~struck~~", "~struck~"),
        ("**bold with *italics* inside**", "*bold with _italics_ inside*"),
        ("a **b** c *d* e", "a *b* c _d_ e"),
        ("# Opening hours", "*Opening hours*"),
        ("### Steps ###", "*Steps*"),
        ("## **Bold** title, *in part*", "*Bold title, _in part_*"),
    ],
)
def test_marks_are_rewritten(markdown: str, mrkdwn: str) -> None:
    """Bold, italics, strikethrough and headings in Slack's marks."""
    assert to_mrkdwn(markdown) == mrkdwn


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("[our page](https://example.com/a)", "<https://example.com/a|our page>"),
        ("see [docs](https://example.com/x_y_z).", "see <https://example.com/x_y_z|docs>."),
        ('[t](https://example.com "a title")', "<https://example.com|t>"),
        ("[t](<https://example.com/a b>)", "[t](&lt;https://example.com/a b&gt;)"),
        (
            "[wiki](https://en.wikipedia.org/wiki/A_(b))",
            "<https://en.wikipedia.org/wiki/A_(b)|wiki>",
        ),
        ("[q](https://example.com/?a=1&b=2)", "<https://example.com/?a=1&amp;b=2|q>"),
        ("[pipe](https://example.com/a|b)", "<https://example.com/a%7Cb|pipe>"),
        ("[mail us](mailto:desk@example.com)", "<mailto:desk@example.com|mail us>"),
        ("![the map](https://example.com/map.png)", "<https://example.com/map.png|the map>"),
        ("[](https://example.com)", "<https://example.com>"),
        ("[**bold** label](https://example.com)", "<https://example.com|**bold** label>"),
    ],
)
def test_links_become_slack_links(markdown: str, mrkdwn: str) -> None:
    """`[text](url)` is `<url|text>`, with `|` in the URL encoded and `&` escaped."""
    assert to_mrkdwn(markdown) == mrkdwn


@pytest.mark.parametrize(
    "markdown",
    [
        "[click](javascript:alert(1))",
        "[relative](/widget/v1/history)",
        "[data](data:text/html,hi)",
    ],
)
def test_links_to_anything_but_http_or_mailto_stay_as_written(markdown: str) -> None:
    assert to_mrkdwn(markdown) == markdown


def test_lists_get_bullets_and_keep_their_indentation() -> None:
    markdown = "Options:\n- one\n* two\n  + nested **bold**\n1. first\n2. second"
    assert to_mrkdwn(markdown) == ("Options:\n• one\n• two\n  • nested *bold*\n1. first\n2. second")


def test_code_is_kept_as_written() -> None:
    """Inside code spans and fenced blocks nothing is converted (only escaped); a fence's
    language goes, and a block left open is closed at the end."""
    assert to_mrkdwn("run `make **all**` now") == "run `make **all**` now"
    assert to_mrkdwn("``a `b` c``") == "``a `b` c``"
    fenced = "Try:\n```python\nprint(**kw)  # <b>\n- not a list\n```\ndone **ok**"
    assert to_mrkdwn(fenced) == (
        "Try:\n```\nprint(**kw)  # &lt;b&gt;\n- not a list\n```\ndone *ok*"
    )
    assert to_mrkdwn("~~~\n__init__\n~~~") == "```\n__init__\n```"
    assert to_mrkdwn("```\nopen **block**") == "```\nopen **block**\n```"


def test_slacks_markup_characters_are_escaped_but_a_quote_stays_a_quote() -> None:
    """`<!channel>` must not notify a channel, `a < b` must not start a link; `> ` quotes."""
    assert to_mrkdwn("<!channel> AT&T <b>x</b>") == "&lt;!channel&gt; AT&amp;T &lt;b&gt;x&lt;/b&gt;"
    assert to_mrkdwn("if a < b and c > d") == "if a &lt; b and c &gt; d"
    assert to_mrkdwn("> quoted **bold**\n>> deeper") == "> quoted *bold*\n>> deeper"


@pytest.mark.parametrize(
    "text",
    [
        "Hello, I'm Concierge. I'll remember that: my desk is 4B.",
        'Tell me "remember …" and I will keep it.',
        "snake_case_name and file_name.py stay",
        "2 * 3 * 4 = 24, and 5 * 6",
        "see https://example.com/a_b_c_d and https://example.com/*x*",
        "a lone * star, a lone _ underscore, ~ tilde",
        "multi\nline\n\ntext",
        "1. not a bullet",
        "",
    ],
)
def test_text_that_is_not_markdown_goes_through_unchanged(text: str) -> None:
    assert to_mrkdwn(text) == text


def test_escaped_punctuation_loses_its_backslash_unless_it_is_a_slack_mark() -> None:
    """mrkdwn has no escapes: an escaped `*` keeps its backslash rather than pair up as bold."""
    assert to_mrkdwn(r"\[not a link\](https://example.com) \#1") == (
        "[not a link](https://example.com) #1"
    )
    assert (
        to_mrkdwn(r"a \*literal\* star, \_under\_ \~x\~") == r"a \*literal\* star, \_under\_ \~x\~"
    )
