"""The hot cache: per KB, a digest of its most-linked and most-recent pages for its agents' system prompts.

Rebuilt in the background (`regenerate`, and whenever processing of the KB goes idle); bounded by
`wiki_hot_cache_max_tokens` (about four characters a token). A soft-deleted cache is left out of
prompts until it is regenerated.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, cast

import peewee

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.wiki import kbs, permissions
from platform_server.features.wiki.models import HotCache, KbAgent, KnowledgeBase, Page, PageLink, PageTypePermission
from platform_server.features.wiki.text import slugify
from platform_server.memo import memo_on
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound

CHARS_PER_TOKEN = 4
MOST_LINKED = 10
MOST_RECENT = 10


def tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _gist(markdown: str) -> str:
    """The first sentence of a page's text (headings and links flattened)."""
    body = "\n".join(line for line in markdown.splitlines() if line.strip() and not line.startswith("#"))
    body = re.sub(r"\[\[([^\]|]+)\|([^\]]+)\]\]", r"\2", body)
    body = re.sub(r"\[\[([^\]]+)\]\]", r"\1", body)
    flat = re.sub(r"\s+", " ", body).strip()
    cut = re.search(r"(?<=[.!?])\s", flat[:300])
    return flat[: cut.start()] if cut else flat[:200]


def digest(kb_id: int, max_tokens: int) -> tuple[str, list[str]]:
    """The digest text and its page slugs (reads only; blocking for a large KB)."""
    kb = KnowledgeBase.get_by_id(kb_id)
    pages = {
        p.id: p for p in Page.select(Page.id, Page.slug, Page.title, Page.markdown, Page.update_time).where((Page.kb == kb_id) & (Page.archived == 0))
    }
    keys: dict[str, int] = {}
    for p in pages.values():
        keys.setdefault(slugify(p.title), p.id)
    for p in pages.values():
        keys[p.slug] = p.id
    counts: dict[int, int] = {}
    q = (
        PageLink.select(PageLink.target_slug, peewee.fn.COUNT(PageLink.id).alias("n"))
        .where(PageLink.kb_id == kb_id)
        .group_by(PageLink.target_slug)
        .tuples()
    )
    for target, n in cast(Iterable[tuple[str, int]], q):
        pid = keys.get(target)
        if pid is not None:
            counts[pid] = counts.get(pid, 0) + n
    linked = sorted((pid for pid in counts), key=lambda pid: (-counts[pid], pages[pid].slug))[:MOST_LINKED]
    recent = [p.id for p in sorted(pages.values(), key=lambda p: (p.update_time, p.id), reverse=True) if p.id not in linked][:MOST_RECENT]
    lines = [f"## Knowledge base: {kb.name}", "Its most-linked and most recent pages (read them with wiki_read):"]
    used: list[str] = []
    budget = max_tokens * CHARS_PER_TOKEN
    size = sum(len(line) + 1 for line in lines)
    for label, ids in (("most linked", linked), ("recent", recent)):
        for pid in ids:
            p = pages[pid]
            line = f"- [[{p.slug}]] {p.title} ({label}{', ' + str(counts[pid]) + ' links' if pid in counts else ''}): {_gist(p.markdown)}"
            if size + len(line) + 1 > budget:
                break
            lines.append(line)
            used.append(p.slug)
            size += len(line) + 1
    if not used:
        return "", []
    return "\n".join(lines), used


to_dict = Fields(
    kbId=ident("kb_id"),
    status="status",
    content="content",
    tokenCount="token_count",
    pages="pages",
    error="error",
    generatedTime=when("generated_time"),
    updateTime=when("update_time"),
)


def get(caller: Caller, kb_id: int) -> dict[str, Any]:
    kb = kbs.get_kb(caller, kb_id)
    row = HotCache.get_or_none((HotCache.kb == kb.id) & (HotCache.deleted == 0))
    if row is None:
        raise NotFound("This knowledge base has no hot cache; POST .../regenerate builds one")
    return to_dict(row)


def delete(caller: Caller, kb_id: int) -> None:
    with database.atomic():
        kb = kbs.get_kb(caller, kb_id)
        row = HotCache.get_or_none((HotCache.kb == kb.id) & (HotCache.deleted == 0))
        if row is None:
            raise NotFound("This knowledge base has no hot cache")
        row.deleted, row.update_time = True, utcnow()
        row.save()
        audit.record(caller, "DELETE", "WIKI_HOT_CACHE", kb.id, f"hot cache of {kb.name}")


def schedule(caller: Caller | None, kb_id: int) -> dict[str, Any] | None:
    """Mark the cache `pending` (and not deleted) before a background rebuild; without a caller
    (processing went idle) a soft-deleted cache stays deleted and None is answered."""
    with database.atomic():
        row = HotCache.get_or_none(HotCache.kb == kb_id)
        if row is not None and row.deleted and caller is None:
            return None
        if row is None:
            if KnowledgeBase.get_or_none(KnowledgeBase.id == kb_id) is None:
                return None
            row = HotCache.create(kb=kb_id)
        row.status, row.deleted, row.update_time = "pending", False, utcnow()
        row.save()
        if caller is not None:
            audit.record(caller, "UPDATE", "WIKI_HOT_CACHE", kb_id, "regenerate hot cache")
    return to_dict(row)


def store(kb_id: int, content: str, slugs: list[str], error: str | None) -> None:
    with database.atomic():
        row = HotCache.get_or_none(HotCache.kb == kb_id)
        if row is None:
            return  # the KB was deleted
        if error is not None:
            row.status, row.error = "failed", error[:1000]
        else:
            row.status, row.error, row.content, row.pages = "ready", None, content, slugs
            row.token_count, row.generated_time = tokens(content), utcnow()
        row.update_time = utcnow()
        row.save()


def _readable(content: str, kb_id: int, agent_id: int, slugs: list[str]) -> str:
    """The digest without the lines of pages whose type the agent may not read (their titles and first
    sentences are theirs to keep); empty when no page line is left."""
    rules = permissions.rules_of(kb_id, agent_id)
    if not any(r.read == "deny" for r in rules.values()):
        return content
    types = {p.slug: p.page_type for p in Page.select(Page.slug, Page.page_type).where((Page.kb == kb_id) & Page.slug.in_(slugs or [""]))}
    hidden = {slug for slug in slugs if permissions.decision(rules, types.get(slug, "\0"), "read") == "deny"}
    lines = [line for line in content.splitlines() if not any(line.startswith(f"- [[{slug}]]") for slug in hidden)]
    return "\n".join(lines) if any(line.startswith("- [[") for line in lines) else ""


@memo_on(Agent, KbAgent, KnowledgeBase, HotCache, Page, PageTypePermission)
def prompt_for_agent(workspace_id: int, agent_id: int, max_tokens: int) -> str:
    """The ready digests of the agent's KBs, within the token bound, without the pages it may not read."""
    parts: list[str] = []
    left = max_tokens
    for kb, _ in kbs.kbs_of_agent(workspace_id, agent_id):
        row = HotCache.get_or_none((HotCache.kb == kb.id) & (HotCache.deleted == 0))
        if row is None or not row.content or row.token_count > left:
            continue
        content = _readable(row.content, kb.id, agent_id, list(row.pages or []))
        if content:
            parts.append(content)
            left -= row.token_count
    return "\n\n".join(parts)
