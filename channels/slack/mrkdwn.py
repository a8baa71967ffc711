"""A role's Markdown as Slack's mrkdwn.

Roles write Markdown, which the web widget renders (a safe part of it); Slack shows a message's
`text` as mrkdwn, whose marks differ. `to_mrkdwn` rewrites what would otherwise show wrong and
leaves everything else as written — it is conservative: text that is not Markdown comes out as it
went in (but for `&`, `<` and `>`, escaped as Slack asks).

| Markdown | mrkdwn |
| --- | --- |
| `**bold**`, `__bold__` | `*bold*` |
| `*italics*`, `_italics_` | `_italics_` |
| `***both***` | `*_both_*` |
| `~~struck~~` | `~struck~` |
| `[text](https://…)`, `![alt](https://…)` | `<https://…|text>` |
| `# Heading` (any level) | `*Heading*` (bold inside it is dropped) |
| `- item`, `* item`, `+ item` | `• item`, indented as written |
| a fence with a language (```` ```python ````) | ```` ``` ```` (else shown as code) |
| escaped punctuation, `\\[` or `\\#` | `[`, `#` |

mrkdwn has no escapes: an escaped `*`, `_`, `~` or backtick keeps its backslash (without it the
mark could pair with another and format what was meant as text).

Code — spans and fenced blocks — is kept as written. `&`, `<` and `>` are escaped everywhere
(`&amp;`, `&lt;`, `&gt;`: Slack reads them as its own markup, and `<!channel>` would notify a
whole channel), except the `>` that begins a quote. A link to anything but an http(s) or mailto
URL stays as written. Ordered lists, quotes and bare URLs mean the same in mrkdwn and are left
alone. Marks are matched within a line, as Slack does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(?=\S)")
_QUOTE = re.compile(r"^ {0,3}(?:>[ \t]?)+")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!~|])")
_LINK = re.compile(
    r"!?\[(?P<label>(?:[^\[\]\\]|\\.)*)\]"
    r"\(\s*<?(?P<url>[^\s()<>]+(?:\([^\s()<>]*\)[^\s()<>]*)*)>?"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
_SAFE_URL = re.compile(r"(?:https?://|mailto:)\S+", re.IGNORECASE)
_BARE_URL = re.compile(r"https?://[^\s<>\"'`\x00]+", re.IGNORECASE)
_EMPHASIS = re.compile(
    r"\*\*\*(?=\S)(?P<both>.+?)(?<=\S)\*\*\*"
    r"|\*\*(?=\S)(?P<strong>.+?)(?<=\S)\*\*"
    r"|(?<!\w)__(?=\S)(?P<strong_>.+?)(?<=\S)__(?!\w)"
    r"|\*(?=[^\s*])(?P<em>.+?)(?<=[^\s*])\*"
    r"|(?<!\w)_(?=[^\s_])(?P<em_>.+?)(?<=[^\s_])_(?!\w)"
    r"|~~(?=\S)(?P<struck>.+?)(?<=\S)~~"
)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
_MARK_CHARS = frozenset("*_~`")
_HELD = re.compile(r"\x00(\d+)\x00")


def to_mrkdwn(markdown: str) -> str:
    """The Markdown text as Slack mrkdwn (the module's table)."""
    lines: list[str] = []
    fence: str | None = None  # the fence of the code block we are in
    for line in markdown.replace("\x00", "").replace("\r\n", "\n").split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening is not None and _closes(fence, opening, line):
                lines.append("```")
                fence = None
            else:
                lines.append(escape(line))
        elif opening is not None:
            fence = opening.group(1)
            lines.append("```")
        else:
            lines.append(_line(line))
    if fence is not None:
        lines.append("```")  # a block left open runs to the end, as the widget shows it
    return "\n".join(lines)


def _closes(fence: str, found: re.Match[str], line: str) -> bool:
    """Whether the fence-like `line` ends the block `fence` opened: the same mark, at least as
    many, nothing after it."""
    mark = found.group(1)
    return mark[0] == fence[0] and len(mark) >= len(fence) and not line[found.end() :].strip()


def _line(line: str) -> str:
    quote = _QUOTE.match(line)
    prefix = quote.group(0) if quote is not None else ""
    rest = line[len(prefix) :]
    if heading := _HEADING.match(rest):
        title = _BOLD.sub(lambda m: m.group(1) or m.group(2), heading.group(1))  # bold already
        return f"{prefix}*{_inline(title)}*" if title.strip() else prefix + _inline(rest)
    if bullet := _BULLET.match(rest):
        return f"{prefix}{bullet.group(1)}• {_inline(rest[bullet.end() :])}"
    return prefix + _inline(rest)


def _inline(text: str) -> str:
    """One line's text outside code blocks: code spans as written, the rest converted."""
    out: list[str] = []
    at = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_prose(text[at : span.start()]))
        out.append(escape(span.group(0)))
        at = span.end()
    out.append(_prose(text[at:]))
    return "".join(out)


def _prose(text: str) -> str:
    held: list[str] = []

    def hold(value: str) -> str:
        held.append(value)
        return f"\x00{len(held) - 1}\x00"

    text = _ESCAPED.sub(
        lambda m: hold(m.group(0) if m.group(1) in _MARK_CHARS else m.group(1)), text
    )
    text = escape(text)
    text = _LINK.sub(lambda m: hold(_link(m)), text)
    text = _BARE_URL.sub(lambda m: hold(m.group(0)), text)
    text = _emphasis(text)
    while _HELD.search(text):  # a link's label may hold an escaped mark
        text = _HELD.sub(lambda m: held[int(m.group(1))], text)
    return text


def _link(found: re.Match[str]) -> str:
    url, label = found.group("url"), found.group("label").strip()
    if not _SAFE_URL.fullmatch(url):
        return found.group(0)
    url = url.replace("|", "%7C")
    return f"<{url}|{label}>" if label and label != url else f"<{url}>"


_MARKS: dict[str, Callable[[str], str]] = {
    "both": lambda inner: f"*_{inner}_*",
    "strong": lambda inner: f"*{inner}*",
    "strong_": lambda inner: f"*{inner}*",
    "em": lambda inner: f"_{inner}_",
    "em_": lambda inner: f"_{inner}_",
    "struck": lambda inner: f"~{inner}~",
}


def _emphasis(text: str) -> str:
    def mark(found: re.Match[str]) -> str:
        kind = found.lastgroup
        assert kind is not None  # every alternative is a named group
        return _MARKS[kind](_emphasis(found.group(kind)))

    return _EMPHASIS.sub(mark, text)


def escape(text: str) -> str:
    """`&`, `<` and `>` as Slack asks (`&amp;`, `&lt;`, `&gt;`): plain text shown as mrkdwn."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
