"""The agent's Markdown converted to what each platform renders (Telegram HTML, Slack mrkdwn).

Code spans and fenced blocks are cut out first so that nothing inside them is converted; the rest is escaped the
way the platform asks before the few Markdown forms are turned into its own markup."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__", re.S)
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)([^*\n]+?)\*(?![\w*])|(?<![\w_])_(?!\s)([^_\n]+?)_(?![\w_])")
_STRIKE = re.compile(r"~~(.+?)~~", re.S)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.M)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.M)


def _protect(text: str, fence: Callable[[str], str], inline: Callable[[str], str]) -> tuple[str, list[str]]:
    """Code replaced by placeholders (converted by `fence`/`inline`), so later rules cannot touch it."""
    kept: list[str] = []

    def keep(value: str) -> str:
        kept.append(value)
        return f"\x00{len(kept) - 1}\x00"

    text = _FENCE.sub(lambda m: keep(fence(m.group(1))), text)
    text = _INLINE.sub(lambda m: keep(inline(m.group(1))), text)
    return text, kept


def _restore(text: str, kept: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)


def telegram_html(markdown: str) -> str:
    """Telegram's HTML parse mode: only <b> <i> <s> <code> <pre> <a>; `<`, `>` and `&` escaped elsewhere
    (Bot API "Formatting options": "All <, > and & symbols that are not a part of a tag or an HTML entity must be
    replaced with the corresponding HTML entities")."""
    text, kept = _protect(
        markdown, lambda c: f"<pre>{html.escape(c.rstrip(), quote=False)}</pre>", lambda c: f"<code>{html.escape(c, quote=False)}</code>"
    )
    text = html.escape(text, quote=False)
    text = _LINK.sub(lambda m: f'<a href="{m.group(2).replace(chr(34), "&quot;")}">{m.group(1)}</a>', text)
    text = _HEADING.sub(lambda m: f"<b>{m.group(1)}</b>", text)
    text = _BOLD.sub(lambda m: f"<b>{m.group(1) or m.group(2)}</b>", text)
    text = _ITALIC.sub(lambda m: f"<i>{m.group(1) or m.group(2)}</i>", text)
    text = _STRIKE.sub(lambda m: f"<s>{m.group(1)}</s>", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    return _restore(text, kept)


def slack_mrkdwn(markdown: str) -> str:
    """Slack's mrkdwn: *bold*, _italic_, ~strike~, <url|text>; `&`, `<`, `>` escaped ("Formatting text for app
    surfaces": "you must escape the three characters &, < and > with their HTML entities")."""

    def esc(value: str) -> str:
        return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    text, kept = _protect(markdown, lambda c: f"```{esc(c.rstrip())}```", lambda c: f"`{esc(c)}`")
    text = esc(text)
    text = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", text)
    text = _HEADING.sub(lambda m: f"\x01{m.group(1)}\x01", text)
    text = _ITALIC.sub(lambda m: f"_{m.group(1) or m.group(2)}_", text)
    text = _BOLD.sub(lambda m: f"\x01{m.group(1) or m.group(2)}\x01", text)
    text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
    text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
    return _restore(text.replace("\x01", "*"), kept)
