"""The page-writing LLM call: prompt with chunks and known pages, strict parse of the JSON answer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from platform_server.features.wiki.text import slugify
from platform_server.integrations.llm.types import ChatMessage

MAX_PAGES_PER_CALL = 20
KNOWN_PAGES_IN_PROMPT = 200

SYSTEM_PROMPT = """You maintain a wiki compiled from source material. Read the numbered source chunks and write or \
update wiki pages that capture their knowledge: one page per notable entity, concept or topic, plus a short summary \
page of the source. Link related pages with [[slug]] or [[slug|label]] wikilinks, reusing the slugs of existing \
pages listed below when a page is about the same thing (returning an existing slug replaces that page with your \
new complete version, so keep what it already says). Cite the chunks each page is based on by their labels (c1, c2, ...).

Answer with one JSON object and nothing else:
{"pages": [{"slug": "lower-case-words-with-dashes", "title": "Title", "pageType": "one of: %s", \
"markdown": "# Title\\n\\nText with [[other-page]] links...", "citations": ["c1", ...]}]}"""


@dataclass
class DraftPage:
    slug: str
    title: str
    page_type: str
    markdown: str
    citations: list[int] = field(default_factory=list)


class DraftError(ValueError):
    """The model's answer is not usable page JSON."""


def build_messages(
    kb_name: str,
    language: str,
    material_title: str,
    chunks: list[tuple[int, str]],
    known: list[tuple[str, str]],
    context_pages: list[tuple[str, str, str]],
    types: list[dict[str, str]],
) -> list[ChatMessage]:
    """System + user messages for one batch of chunks."""
    lang = "the language of the source" if language == "auto" else language
    parts = [f"Knowledge base: {kb_name}", f"Write pages in {lang}.", f"Source: {material_title}", ""]
    if known:
        parts.append("Existing pages (slug: title):")
        parts += [f"- {slug}: {title}" for slug, title in known[:KNOWN_PAGES_IN_PROMPT]]
        parts.append("")
    for slug, title, markdown in context_pages:
        parts += [f"Current content of existing page {slug} ({title}):", markdown[:2000], ""]
    parts.append("Source chunks:")
    for n, (_, text) in enumerate(chunks, start=1):
        parts += [f"[c{n}]", text, ""]
    described = "; ".join(f"{t['name']} ({t['description']})" if t.get("description") else t["name"] for t in types)
    return [ChatMessage("system", SYSTEM_PROMPT % described), ChatMessage("user", "\n".join(parts))]


def _json_object(text: str) -> Any:
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", body, re.S)
    if fence:
        body = fence.group(1).strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise DraftError("the answer holds no JSON object")
    try:
        return json.loads(body[start : end + 1])
    except ValueError as exc:
        raise DraftError(f"the answer is not valid JSON: {exc}") from exc


def parse_pages(text: str, chunk_ids: list[int], type_names: list[str], default_type: str) -> list[DraftPage]:
    """Pages from the model's answer; citation labels `cN` map to the batch's chunk ids, others are dropped."""
    data = _json_object(text)
    items = data.get("pages") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise DraftError("the answer has no 'pages' list")
    out: dict[str, DraftPage] = {}
    for item in items[:MAX_PAGES_PER_CALL]:
        if not isinstance(item, dict):
            continue
        title = str(item.get("title") or "").strip()[:200]
        markdown = item.get("markdown")
        if not title or not isinstance(markdown, str) or not markdown.strip():
            continue
        slug = slugify(str(item.get("slug") or "")) or slugify(title)
        if not slug:
            continue
        page_type = str(item.get("pageType") or default_type).strip().lower()
        if page_type not in type_names:
            page_type = default_type
        cites = []
        for c in item.get("citations") or []:
            label = re.sub(r"^(chunk|c)\s*", "", str(c).strip().lower())
            if not label.isdigit() or not 1 <= int(label) <= len(chunk_ids):
                continue
            cid = chunk_ids[int(label) - 1]
            if cid not in cites:
                cites.append(cid)
        out[slug] = DraftPage(slug, title, page_type, markdown.strip(), cites)
    if not out:
        raise DraftError("the answer holds no usable page")
    return list(out.values())
