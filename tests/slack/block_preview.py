"""A preview of a message's Block Kit blocks as a page, for screenshots in the docs.

Slack draws the messages the gateway posts; the tests talk to a fake Slack that draws nothing.
To show in docs/approvals.md what a person sees, the blocks the gateway sent (read back from the
fake) are drawn here in the manner of a Slack message — the blocks approvals use (`section`,
`context`, `actions` with buttons) and the mrkdwn they carry (bold, italic, code, preformatted,
links, dates). It is a drawing of our blocks, not a capture of Slack's client; the docs say so.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

_DATE = re.compile(r"<!date\^[^|>]*\|([^>]*)>")
_LINK = re.compile(r"<(?:https?://|mailto:)[^|>]*\|([^>]*)>")
_PRE = re.compile(r"```(.*?)```", re.S)
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_([^_\n]+)_(?![\w_])")

_STYLE = """
body { font: 15px/1.46668 -apple-system, "Segoe UI", Lato, Helvetica, Arial, sans-serif;
       color: #1d1c1d; background: #fff; margin: 0; padding: 16px 20px; width: 560px; }
.message { display: flex; gap: 8px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #4a3ad9; color: #fff;
          display: flex; align-items: center; justify-content: center; font-weight: 700; }
.name { font-weight: 900; } .app { font-size: 10px; background: #ececec; color: #616061;
       border-radius: 2px; padding: 1px 3px; margin: 0 4px; font-weight: 700; }
.time { color: #616061; font-size: 12px; }
.section { margin: 4px 0; white-space: normal; }
.context { color: #616061; font-size: 13px; margin: 4px 0; }
.actions { display: flex; gap: 8px; margin: 8px 0 4px; }
.button { border: 1px solid #bbb; border-radius: 4px; padding: 0 12px; height: 28px;
          font-weight: 700; font-size: 13px; background: #fff; color: #1d1c1d; }
.button.primary { background: #007a5a; border-color: #007a5a; color: #fff; }
.button.danger { background: #fff; border-color: #e01e5a; color: #e01e5a; }
code { color: #e01e5a; background: #f6f6f6; border: 1px solid #ddd; border-radius: 3px;
       padding: 0 3px; font-size: 12px; }
pre { background: #f8f8f8; border: 1px solid #ddd; border-radius: 4px; padding: 8px;
      font-size: 12px; white-space: pre-wrap; margin: 4px 0; }
"""


def mrkdwn_html(text: str) -> str:
    """Slack's mrkdwn as HTML. Slack's own escapes (`&lt;`, `&gt;`, `&amp;`) are HTML's too;
    anything else is escaped before the marks are drawn."""
    text = _DATE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    shown = html.escape(html.unescape(text), quote=False)
    pres: list[str] = []

    def keep(match: re.Match[str]) -> str:
        pres.append(f"<pre>{match.group(1).strip()}</pre>")
        return f"\x00{len(pres) - 1}\x00"

    shown = _PRE.sub(keep, shown)
    shown = _CODE.sub(r"<code>\1</code>", shown)
    shown = _BOLD.sub(r"<b>\1</b>", shown)
    shown = _ITALIC.sub(r"<i>\1</i>", shown)
    shown = shown.replace("\n", "<br>")
    return re.sub("\x00(\\d+)\x00", lambda m: pres[int(m.group(1))], shown)


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "section":
        return f'<div class="section">{mrkdwn_html(block["text"]["text"])}</div>'
    if kind == "context":
        texts = " ".join(mrkdwn_html(e.get("text", "")) for e in block.get("elements", []))
        return f'<div class="context">{texts}</div>'
    if kind == "actions":
        buttons = "".join(
            f'<button class="button {html.escape(e.get("style", ""))}">'
            f"{html.escape(e['text']['text'])}</button>"
            for e in block.get("elements", [])
            if e.get("type") == "button"
        )
        return f'<div class="actions">{buttons}</div>'
    raise AssertionError(f"the preview does not draw blocks of type {kind!r}")


def preview_page(blocks: Sequence[dict[str, Any]], *, bot: str, time: str) -> str:
    """A page with one message of `bot` made of `blocks`."""
    body = "".join(_block(block) for block in blocks)
    name = html.escape(bot)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><style>{_STYLE}</style></head><body>"
        f'<div class="message"><div class="avatar">{name[:1]}</div><div>'
        f'<span class="name">{name}</span><span class="app">APP</span>'
        f'<span class="time">{html.escape(time)}</span>{body}</div></div></body></html>'
    )
