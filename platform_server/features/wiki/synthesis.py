"""Writing a generated text (research report, transformation output) as a `synthesis` page of a KB."""

from __future__ import annotations

from typing import Sequence

from platform_server.db import database
from platform_server.features.audit import service as audit
from platform_server.features.wiki import profile, search
from platform_server.features.wiki.models import Chunk, KnowledgeBase, Page, PageCitation, PageSource, RawMaterial
from platform_server.features.wiki.pages import set_links
from platform_server.features.wiki.text import slugify
from platform_server.web.context import Caller


def save_page(
    caller: Caller | None,
    kb: KnowledgeBase,
    slug_hint: str,
    title: str,
    markdown: str,
    origin: str,
    chunk_ids: Sequence[int] = (),
    raw_ids: Sequence[int] = (),
) -> Page:
    """A new page (a free slug from the hint) citing the KB's chunks given; runs in one transaction."""
    types = profile.type_names(kb)
    page_type = "synthesis" if "synthesis" in types else profile.profile_of(kb)["defaultType"]
    base = slugify(slug_hint)[:80].strip("-") or "synthesis"
    with database.atomic():
        slug, n = base, 1
        while Page.get_or_none((Page.kb == kb.id) & (Page.slug == slug)) is not None:
            n += 1
            slug = f"{base}-{n}"
        page = Page.create(
            kb=kb.id,
            workspace_id=kb.workspace_id,
            slug=slug,
            title=title.strip()[:200] or slug,
            page_type=page_type,
            markdown=markdown,
            origin=origin,
        )
        set_links(page)
        search.fts_put_page(page)
        live = {c.id for c in Chunk.select(Chunk.id).where(Chunk.id.in_(list(chunk_ids) or [0]) & (Chunk.kb == kb.id))}
        for cid in chunk_ids:
            if cid in live:
                PageCitation.insert(page=page.id, chunk=cid, kb_id=kb.id).on_conflict_ignore().execute()
        for rid in RawMaterial.select(RawMaterial.id).where(RawMaterial.id.in_(list(raw_ids) or [0]) & (RawMaterial.kb == kb.id)):
            PageSource.insert(page=page.id, raw=rid.id).on_conflict_ignore().execute()
        audit.record(caller, "CREATE", "WIKI_PAGE", page.id, f"{origin} page {slug} in {kb.name}", workspace_id=kb.workspace_id)
    return page
