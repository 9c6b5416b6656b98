"""Wiki pages: read, edit, archive, rename with referrer rewrite, links, backlinks, citations."""

from __future__ import annotations

import json
from typing import Any

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki import profile, search
from platform_server.features.wiki.kbs import get_kb
from platform_server.features.wiki.models import (
    Chunk,
    KnowledgeBase,
    Page,
    PageCitation,
    PageLink,
    PageSource,
    RawMaterial,
)
from platform_server.features.wiki.schemas import BatchDelete, PageEdit, RenameRequest
from platform_server.features.wiki.text import rewrite_links, slugify, wikilinks
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound, Unprocessable
from platform_server.web.pagination import PageRequest, paginate

# ---- serialising ------------------------------------------------------------------------------

summary = Fields(
    id=ident("id"),
    kbId=ident("kb_id"),
    slug="slug",
    title="title",
    pageType="page_type",
    archived="archived",
    archivedReason="archived_reason",
    hasPendingChange=lambda p: p.pending is not None,
    origin="origin",
    version="version",
    createTime=when("create_time"),
    updateTime=when("update_time"),
    # the original console's name for `origin`: "manual" or "ai" (its page header reads it)
    lastUpdatedBy=lambda p: "manual" if p.origin == "manual" else "ai",
)


def resolver(kb_id: int) -> dict[str, Page]:
    """Slug-form key (slug, and slug of the title) -> page, for resolving wikilinks."""
    out: dict[str, Page] = {}
    for p in Page.select(Page.id, Page.slug, Page.title, Page.archived, Page.kb, Page.page_type).where(Page.kb == kb_id):
        out.setdefault(slugify(p.title), p)
    for p in Page.select(Page.id, Page.slug, Page.title, Page.archived, Page.kb, Page.page_type).where(Page.kb == kb_id):
        out[p.slug] = p
    return out


def detail(p: Page) -> dict[str, Any]:
    keys = resolver(p.kb_id)
    links = []
    for link in PageLink.select().where(PageLink.page == p.id).order_by(PageLink.id):
        target = keys.get(link.target_slug)
        links.append(
            {
                "target": link.target_text,
                "slug": target.slug if target else link.target_slug,
                "title": target.title if target else None,
                "exists": target is not None,
                "archived": target.archived if target else None,
            }
        )
    raw_ids = [s.raw_id for s in PageSource.select(PageSource.raw).where(PageSource.page == p.id)]
    return {
        **summary(p),
        "markdown": p.markdown,
        "content": p.markdown,  # the original console reads and edits `content` (spec name: `markdown`)
        "outgoingLinks": json.dumps([link["target"] for link in links], ensure_ascii=False),
        "sourceRawIds": json.dumps([str(r) for r in raw_ids]),  # the console parses this JSON text
        "pendingChange": dict(p.pending) if p.pending else None,  # a re-sync's version to review (wiki/sync.py)
        "links": links,
        "rawIds": [str(r) for r in raw_ids],
        "citationCount": PageCitation.select().where(PageCitation.page == p.id).count(),
        "backlinkCount": len(_backlink_pages(p)),
    }


# ---- lookups ----------------------------------------------------------------------------------


def get_page(kb: KnowledgeBase, slug: str) -> Page:
    page = Page.get_or_none((Page.kb == kb.id) & (Page.slug == slug))
    if page is None:
        raise NotFound("Page not found")
    return page


def _listed(caller: Caller, kb_id: int, raw_id: int | None, page_type: str | None, q: str | None, pending: bool) -> Any:
    kb = get_kb(caller, kb_id)
    query = Page.select().where((Page.kb == kb.id) & (Page.archived == 0))
    if pending:
        query = query.where(Page.pending.is_null(False))
    if raw_id is not None:
        query = query.where(Page.id.in_(PageSource.select(PageSource.page).where(PageSource.raw == raw_id)))
    if page_type:
        query = query.where(Page.page_type == page_type)
    if q:
        query = query.where(Page.title.contains(q) | Page.slug.contains(q))
    return query.order_by(Page.title, Page.id)


def list_pages(
    caller: Caller, kb_id: int, req: PageRequest, raw_id: int | None, page_type: str | None, q: str | None, pending: bool = False
) -> dict[str, Any]:
    return paginate(_listed(caller, kb_id, raw_id, page_type, q, pending), req, summary)


def all_pages(caller: Caller, kb_id: int, raw_id: int | None, page_type: str | None, q: str | None, pending: bool = False) -> list[dict[str, Any]]:
    """Every matching page with its outgoing link targets (JSON text): the original console's sidebar
    and graph take the whole list in one answer and draw edges from `outgoingLinks`."""
    rows = list(_listed(caller, kb_id, raw_id, page_type, q, pending))
    targets: dict[int, list[str]] = {}
    if rows:
        for link in PageLink.select(PageLink.page, PageLink.target_text).where(PageLink.kb_id == rows[0].kb_id).order_by(PageLink.id):
            targets.setdefault(link.page_id, []).append(link.target_text)
    return [{**summary(p), "outgoingLinks": json.dumps(targets.get(p.id, []), ensure_ascii=False)} for p in rows]


def archived(caller: Caller, kb_id: int) -> list[dict[str, Any]]:
    kb = get_kb(caller, kb_id)
    return [summary(p) for p in Page.select().where((Page.kb == kb.id) & (Page.archived == 1)).order_by(Page.title)]


def refs(caller: Caller, kb_id: int) -> list[dict[str, Any]]:
    kb = get_kb(caller, kb_id)
    q = Page.select(Page.slug, Page.title, Page.archived).where(Page.kb == kb.id).order_by(Page.slug)
    return [{"slug": p.slug, "title": p.title, "archived": p.archived} for p in q]


def get(caller: Caller, kb_id: int, slug: str) -> dict[str, Any]:
    return detail(get_page(get_kb(caller, kb_id), slug))


def _backlink_pages(p: Page) -> list[Page]:
    keys = {p.slug, slugify(p.title)}
    owners = resolver(p.kb_id)
    # A title key that another page owns as its slug resolves to that page, not this one.
    keys = {k for k in keys if owners.get(k) is not None and owners[k].id == p.id}
    if not keys:
        return []
    q = (
        Page.select()
        .join(PageLink, on=(PageLink.page == Page.id))
        .where((PageLink.kb_id == p.kb_id) & PageLink.target_slug.in_(list(keys)) & (Page.id != p.id))
        .distinct()
        .order_by(Page.title)
    )
    return list(q)


def backlinks(caller: Caller, kb_id: int, slug: str) -> list[dict[str, Any]]:
    page = get_page(get_kb(caller, kb_id), slug)
    return [summary(p) for p in _backlink_pages(page)]


def citations(caller: Caller, kb_id: int, page_id: int) -> list[dict[str, Any]]:
    kb = get_kb(caller, kb_id)
    page = Page.get_or_none((Page.id == page_id) & (Page.kb == kb.id))
    if page is None:
        raise NotFound("Page not found")
    q = (
        PageCitation.select(PageCitation, Chunk, RawMaterial.id, RawMaterial.title)
        .join(Chunk)
        .join(RawMaterial, on=(Chunk.raw == RawMaterial.id))
        .where(PageCitation.page == page.id)
        .order_by(Chunk.raw, Chunk.position)
    )
    return [
        {"chunkId": str(c.chunk.id), "rawId": str(c.chunk.raw.id), "rawTitle": c.chunk.raw.title, "position": c.chunk.position, "text": c.chunk.text}
        for c in q
    ]


def pages_of_chunk(caller: Caller, chunk_id: int) -> list[dict[str, Any]]:
    chunk = Chunk.select().join(KnowledgeBase).where((Chunk.id == chunk_id) & (KnowledgeBase.workspace_id == caller.workspace_id)).first()
    if chunk is None:
        raise NotFound("Chunk not found")
    q = Page.select().join(PageCitation).where(PageCitation.chunk == chunk.id).order_by(Page.title)
    return [summary(p) for p in q]


def pages_of_raw(caller: Caller, raw_id: int) -> list[dict[str, Any]]:
    raw = RawMaterial.get_or_none((RawMaterial.id == raw_id) & (RawMaterial.workspace_id == caller.workspace_id))
    if raw is None:
        raise NotFound("Raw material not found")
    q = Page.select().join(PageSource).where(PageSource.raw == raw.id).order_by(Page.title)
    return [summary(p) for p in q]


def lookup(caller: Caller, title: str | None, slug: str | None) -> list[dict[str, Any]]:
    """Pages of every KB in the workspace whose title (case-insensitive) or slug matches; naming neither matches none
    (OpenAPI 3.0 cannot state "one of these two query parameters", so the document requires neither)."""
    if not (title or slug):
        return []
    q = Page.select().where(Page.workspace_id == caller.workspace_id)
    cond = None
    if title:
        cond = Page.title ** title.strip()  # ILIKE without wildcards: case-insensitive equality
    if slug:
        s = Page.slug == slugify(slug)
        cond = s if cond is None else (cond | s)
    kb_names = {kb.id: kb.name for kb in KnowledgeBase.select().where(KnowledgeBase.workspace_id == caller.workspace_id)}
    return [{**summary(p), "kbName": kb_names.get(p.kb_id, "")} for p in q.where(cond).order_by(Page.title)]


# ---- writing ----------------------------------------------------------------------------------


def set_links(page: Page) -> None:
    """Recompute the page's outgoing wikilinks from its markdown."""
    PageLink.delete().where(PageLink.page == page.id).execute()
    Page.update(token_count=None).where(Page.id == page.id).execute()  # the text changed: counted again by the backfill
    for link in wikilinks(page.markdown):
        PageLink.create(page=page.id, kb_id=page.kb_id, target_slug=link.slug, target_text=link.target[:200])


def edit(caller: Caller, kb_id: int, slug: str, req: PageEdit, embedding: bytes | None, embed_model: int | None = None) -> dict[str, Any]:
    """Manual edit: markdown (and optionally title, pageType); links and the search index follow."""
    with database.atomic():
        kb = get_kb(caller, kb_id)
        page = get_page(kb, slug)
        page.markdown = req.markdown
        if req.title is not None:
            page.title = req.title.strip()
        if req.pageType is not None:
            page.page_type = profile.check_type(kb, req.pageType)
        page.origin = "manual"
        page.version += 1
        page.update_time = utcnow()
        if embedding is not None:
            page.embedding, page.dims, page.embed_model = embedding, len(embedding) // 4, embed_model
        page.save()
        set_links(page)
        search.fts_put_page(page)
        audit.record(caller, "UPDATE", "WIKI_PAGE", page.id, f"page {page.slug}")
    return detail(page)


def _delete_pages(pages: list[Page]) -> None:
    ids = [p.id for p in pages]
    if not ids:
        return
    search.fts_drop_pages(ids)
    Page.delete().where(Page.id.in_(ids)).execute()


def delete(caller: Caller, kb_id: int, slug: str) -> None:
    with database.atomic():
        page = get_page(get_kb(caller, kb_id), slug)
        _delete_pages([page])
        audit.record(caller, "DELETE", "WIKI_PAGE", page.id, f"page {page.slug}")


def batch_delete(caller: Caller, kb_id: int, req: BatchDelete) -> dict[str, Any]:
    """Delete pages by slug and/or id; unknown ones are ignored."""
    if not req.slugs and not req.ids:
        raise BadRequest("slugs: give at least one slug or id")
    with database.atomic():
        kb = get_kb(caller, kb_id)
        cond = Page.slug.in_(req.slugs or [""]) | Page.id.in_(req.ids or [0])
        pages = list(Page.select().where((Page.kb == kb.id) & cond))
        _delete_pages(pages)
        if pages:
            audit.record(caller, "DELETE", "WIKI_PAGE", None, f"{len(pages)} pages of {kb.name}: " + ", ".join(p.slug for p in pages)[:400])
    return {"deleted": len(pages)}


def set_archived(caller: Caller, kb_id: int, slug: str, value: int) -> dict[str, Any]:
    with database.atomic():
        page = get_page(get_kb(caller, kb_id), slug)
        page.archived, page.archived_reason = value, None  # a person's choice: a re-sync leaves it archived
        page.update_time = utcnow()
        page.save()
        audit.record(caller, "UPDATE", "WIKI_PAGE", page.id, f"{'archive' if value else 'unarchive'} page {page.slug}")
    return summary(page)


def rename(caller: Caller, kb_id: int, slug: str, req: RenameRequest) -> dict[str, Any]:
    """Give a page a new slug and/or title and rewrite every referrer's wikilinks to the new slug."""
    if req.newSlug is None and req.newTitle is None:
        raise BadRequest("newSlug: give newSlug or newTitle")
    with database.atomic():
        kb = get_kb(caller, kb_id)
        page = get_page(kb, slug)
        new_title = req.newTitle.strip() if req.newTitle else page.title
        new_slug = slugify(req.newSlug) if req.newSlug else slugify(new_title)
        if not new_slug:  # letters and digits of any script: OpenAPI 3.0's patterns cannot name them, a documented 422
            raise Unprocessable("newSlug: must contain a letter or digit (or newTitle, when no newSlug is given)")
        if new_slug != page.slug and Page.get_or_none((Page.kb == kb.id) & (Page.slug == new_slug)):
            raise Conflict(f"A page with slug '{new_slug}' already exists")
        referrers = _backlink_pages(page)
        old_keys = {page.slug, slugify(page.title)}
        page.slug, page.title = new_slug, new_title
        page.version += 1
        page.update_time = utcnow()
        page.save()
        search.fts_put_page(page)
        for ref in referrers:
            ref.markdown = rewrite_links(ref.markdown, old_keys, new_slug)
            ref.version += 1
            ref.update_time = utcnow()
            ref.save()
            set_links(ref)
            search.fts_put_page(ref)
        audit.record(caller, "UPDATE", "WIKI_PAGE", page.id, f"rename {slug} -> {new_slug}; {len(referrers)} referrers rewritten")
    return {**detail(page), "updatedReferrers": [r.slug for r in referrers]}


def related(caller: Caller, kb_id: int, slug: str, limit: int = 10) -> list[dict[str, Any]]:
    """Pages this page links to, pages linking here, then the most similar by embedding."""
    kb = get_kb(caller, kb_id)
    page = get_page(kb, slug)
    keys = resolver(kb.id)
    out: dict[int, dict[str, Any]] = {}
    for link in PageLink.select().where(PageLink.page == page.id):
        target = keys.get(link.target_slug)
        if target is not None and target.id != page.id and not target.archived:
            out.setdefault(target.id, {**_mini(target), "relation": "links_to", "score": 1.0})
    for ref in _backlink_pages(page):
        if not ref.archived:
            out.setdefault(ref.id, {**_mini(ref), "relation": "linked_from", "score": 1.0})
    if page.embedding is not None:
        others = list(Page.select().where((Page.kb == kb.id) & (Page.id != page.id) & (Page.archived == 0)))
        # Only vectors of the same model compare (a re-embedding may be half way).
        scores = search.cosine_all(page.embedding, [o.embedding if o.embed_model == page.embed_model else None for o in others])
        ranked = sorted(zip(others, scores), key=lambda t: -float(t[1]))
        for other, score in ranked:
            if len(out) >= limit:
                break
            if other.id not in out and float(score) > 0:
                out[other.id] = {**_mini(other), "relation": "similar", "score": round(float(score), 4)}
    return list(out.values())[:limit]


_mini = Fields(
    pageId=ident("id"),
    slug="slug",
    title="title",
    pageType="page_type",
)


def stats(caller: Caller, kb_id: int) -> dict[str, Any]:
    kb = get_kb(caller, kb_id)
    by_status = {s: 0 for s in ("pending", "processing", "completed", "failed", "partial", "cancelled")}
    for raw in RawMaterial.select(RawMaterial.status).where(RawMaterial.kb == kb.id):
        by_status[raw.status] = by_status.get(raw.status, 0) + 1
    pages = list(Page.select(Page.page_type, Page.archived).where(Page.kb == kb.id))
    types: dict[str, int] = {}
    for p in pages:
        if not p.archived:
            types[p.page_type] = types.get(p.page_type, 0) + 1
    keys = resolver(kb.id)
    links = list(PageLink.select(PageLink.target_slug).where(PageLink.kb_id == kb.id))
    return {
        "kbId": str(kb.id),
        "rawCount": sum(by_status.values()),
        "rawByStatus": by_status,
        "pageCount": sum(1 for p in pages if not p.archived),
        "archivedPageCount": sum(1 for p in pages if p.archived),
        "pageTypes": types,
        "chunkCount": Chunk.select().where(Chunk.kb == kb.id).count(),
        "linkCount": len(links),
        "brokenLinkCount": sum(1 for link in links if link.target_slug not in keys),
        "citationCount": PageCitation.select().where(PageCitation.kb_id == kb.id).count(),
    }
