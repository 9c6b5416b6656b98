"""The web_fetch tool: an SSRF-guarded GET whose HTML answer is reduced to readable text."""

from __future__ import annotations

import asyncio
import html.parser
import re
from typing import TYPE_CHECKING, Any

from platform_server.blocking import run_blocking
from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
_BLOCK = frozenset(
    "address article aside blockquote br dd div dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 "
    "header hr li main nav ol p pre section table td th tr ul title".split()
)
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript")


class _TextExtractor(html.parser.HTMLParser):
    """Collects visible text: drops scripts, styles and tags; block elements become line breaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip_depth += 1
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP and self._skip_depth:
            self._skip_depth -= 1
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip_depth:
            self.parts.append(data)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, visible text) of an HTML document, whitespace collapsed."""
    parser = _TextExtractor()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed markup: keep what was parsed
        pass
    lines = (re.sub(r"[ \t\r\f\v\u00a0]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    text = "\n".join(line for line in lines if line)
    return " ".join(parser.title.split()), text


def _render(result: net_guard.FetchResult) -> str:
    ctype = result.content_type.lower()
    charset = result.charset or "utf-8"
    try:
        raw = result.body.decode(charset, "replace")
    except LookupError:
        raw = result.body.decode("utf-8", "replace")
    header = [f"URL: {result.url}", f"Status: {result.status}", f"Content-Type: {ctype or 'unknown'}"]
    if "html" in ctype or (not ctype and raw.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))):
        title, text = html_to_text(raw)
        if title:
            header.append(f"Title: {title}")
    elif ctype.startswith(_TEXT_TYPES) or not ctype:
        text = raw
    else:
        text = f"[binary content not shown: {len(result.body)} bytes]"
    if result.truncated:
        text += f"\n[truncated: the response exceeded {len(result.body)} bytes]"
    return "\n".join(header) + "\n\n" + text


async def web_fetch(args: dict[str, Any], ctx: ToolContext) -> str:
    url = args["url"].strip()
    config = ctx.config
    try:
        result = await net_guard.fetch(
            url,
            allow_hosts=config.web_fetch_allow_hosts,
            max_bytes=config.web_fetch_max_bytes,
            timeout_s=config.web_fetch_timeout_s,
        )
    except net_guard.BlockedUrl as exc:
        raise ToolError(f"web_fetch refused {url}: {exc}") from None
    except (asyncio.TimeoutError, TimeoutError):
        raise ToolError(f"web_fetch timed out after {config.web_fetch_timeout_s:g} seconds: {url}") from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise ToolError(f"web_fetch failed for {url}: {type(exc).__name__}: {exc}") from None
    text = await run_blocking(_render, result)
    if result.status >= 400:
        raise ToolError(f"HTTP {result.status} from {result.url}\n\n{text[:4000]}")
    return text


WEB_FETCH = ToolDefinition(
    "web_fetch",
    "Fetch a public http(s) URL and return its text (HTML is reduced to readable text).",
    {
        "type": "object",
        "properties": {"url": {"type": "string", "description": "An http:// or https:// URL"}},
        "required": ["url"],
    },
    web_fetch,
)
