"""Page maintenance: how two pages relate, LLM enrich and repair (links and citations kept), admin batches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.models.capabilities import able
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.usage import meter
from platform_server.features.wiki import kbs, pages, search
from platform_server.features.wiki.generate import DraftError
from platform_server.features.wiki.models import (
    Chunk,
    KnowledgeBase,
    Page,
    PageCitation,
    PageLink,
    PageSource,
    RawMaterial,
)
from platform_server.features.wiki.pages import get_page, resolver, set_links
from platform_server.features.wiki.schemas import EnrichRequest
from platform_server.features.wiki.text import wikilinks
from platform_server.integrations.llm.types import ChatMessage, ChatRequest
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

CHARS_PER_TOKEN = 4
BACKFILL_BATCH = 500

ENRICH_PROMPT = """You improve one wiki page. Rewrite it in Markdown, adding detail only from the source chunks \
given. Keep every [[wikilink]] of the current page and its meaning. Answer with the complete page only."""
REPAIR_PROMPT = """You repair one wiki page whose [[wikilinks]] point at pages that do not exist. Rewrite the \
page so each broken link points at the existing page it means (use its slug) or becomes plain text when none \
fits. Change nothing else. Answer with the complete page only."""


def relation(caller: Caller, kb_id: int, slug_a: str, slug_b: str) -> dict[str, Any]:
    """Direct links both ways, shared citations and sources, common neighbours, vector similarity."""
    kb = kbs.get_kb(caller, kb_id)
    a, b = get_page(kb, slug_a), get_page(kb, slug_b)
    keys = resolver(kb.id)

    def targets(p: Page) -> set[int]:
        out = set()
        for link in PageLink.select(PageLink.target_slug).where(PageLink.page == p.id):
            t = keys.get(link.target_slug)
            if t is not None:
                out.add(t.id)
        return out

    out_a, out_b = targets(a), targets(b)
    cites_a = {c.chunk_id for c in PageCitation.select(PageCitation.chunk).where(PageCitation.page == a.id)}
    cites_b = {c.chunk_id for c in PageCitation.select(PageCitation.chunk).where(PageCitation.page == b.id)}
    shared = sorted(cites_a & cites_b)
    chunks = [
        {"chunkId": str(c.id), "rawId": str(c.raw_id), "position": c.position, "text": c.text[:300]}
        for c in Chunk.select().where(Chunk.id.in_(shared or [0]))
    ]
    src_a = {s.raw_id for s in PageSource.select(PageSource.raw).where(PageSource.page == a.id)}
    src_b = {s.raw_id for s in PageSource.select(PageSource.raw).where(PageSource.page == b.id)}
    common = sorted((out_a & out_b) - {a.id, b.id})
    neighbours = [{"slug": p.slug, "title": p.title} for p in Page.select().where(Page.id.in_(common or [0]))]
    similarity = None
    if a.embedding is not None and b.embedding is not None and len(a.embedding) == len(b.embedding) and a.embed_model == b.embed_model:
        similarity = round(float(search.cosine_all(a.embedding, [b.embedding])[0]), 4)
    facts = []
    if b.id in out_a:
        facts.append(f"{a.slug} links to {b.slug}")
    if a.id in out_b:
        facts.append(f"{b.slug} links to {a.slug}")
    if shared:
        facts.append(f"they cite {len(shared)} source chunk(s) in common")
    if neighbours:
        facts.append(f"both link to {', '.join(n['slug'] for n in neighbours)}")
    if similarity is not None:
        facts.append(f"their content similarity is {similarity:.2f}")
    return {
        "a": pages.summary(a),
        "b": pages.summary(b),
        "directLinks": {"aToB": b.id in out_a, "bToA": a.id in out_b},
        "sharedCitations": chunks,
        "sharedSourceRawIds": [str(r) for r in sorted(src_a & src_b)],
        "commonNeighbours": neighbours,
        "similarity": similarity,
        "summary": "; ".join(facts) or "no direct connection found",
    }


async def _ask(router: LlmRouter, caller: Caller, kb: KnowledgeBase, system: str, user: str, source: str) -> str:
    cfg = kbs.config_of(kb)
    targets = able(resolve_targets(cfg["generationModelName"], cfg["generationModelProvider"], []), "json", "wiki enrich/repair")
    request = ChatRequest(model="", messages=[ChatMessage("system", system), ChatMessage("user", user)], temperature=0.2)
    with meter.scope(source, kb.workspace_id, caller.user_id):
        _, result = await router.chat(targets, request)
    text = str(result.content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").split("\n", 1)[-1].rsplit("```", 1)[0].strip()
    if not text:
        raise DraftError("the model answered nothing")
    return text


def _save_rewrite(caller: Caller, page: Page, markdown: str, what: str) -> None:
    with database.atomic():
        current = Page.get_by_id(page.id)
        current.markdown, current.version, current.update_time = markdown, current.version + 1, utcnow()
        current.save()
        set_links(current)
        search.fts_put_page(current)
        audit.record(caller, "UPDATE", "WIKI_PAGE", page.id, f"{what} page {page.slug}")


async def enrich(router: LlmRouter, caller: Caller, kb_id: int, slug: str, req: EnrichRequest) -> dict[str, Any]:
    """An LLM rewrite with more detail from the page's cited chunks; dropped wikilinks are put back (and listed)."""
    kb = kbs.get_kb(caller, kb_id)
    page = get_page(kb, slug)
    cited = list(Chunk.select().join(PageCitation).where(PageCitation.page == page.id).order_by(Chunk.position))
    sources = "\n\n".join(f"[c{n}] {c.text[:1500]}" for n, c in enumerate(cited[:12], start=1)) or "(no cited chunks)"
    user = f"Current page {page.slug} ({page.title}):\n{page.markdown}\n\nSource chunks:\n{sources}" + (
        f"\n\nAlso: {req.instructions}" if req.instructions.strip() else ""
    )
    markdown = await _ask(router, caller, kb, ENRICH_PROMPT, user, "wiki_enrich")
    before = {link.slug: link for link in wikilinks(page.markdown)}
    after = {link.slug for link in wikilinks(markdown)}
    dropped = [before[s] for s in before if s not in after]
    if dropped:
        markdown += "\n\n## See also\n\n" + "\n".join(
            f"- [[{link.target}|{link.label}]]" if link.label else f"- [[{link.target}]]" for link in dropped
        )
    _save_rewrite(caller, page, markdown, "enrich")
    return {**pages.detail(Page.get_by_id(page.id)), "restoredLinks": [link.target for link in dropped], "citations": len(cited)}


async def repair(router: LlmRouter, caller: Caller, kb_id: int, slug: str) -> dict[str, Any]:
    """Fix broken wikilinks with the LLM: each is retargeted to an existing page or unlinked, and listed."""
    kb = kbs.get_kb(caller, kb_id)
    page = get_page(kb, slug)
    keys = resolver(kb.id)
    links = wikilinks(page.markdown)
    broken = [link for link in links if link.slug not in keys]
    if not broken:
        return {**pages.detail(page), "changedLinks": [], "removedLinks": [], "repaired": False}
    known = "\n".join(
        f"- {p.slug}: {p.title}"
        for p in Page.select(Page.slug, Page.title).where((Page.kb == kb.id) & (Page.archived == 0)).order_by(Page.slug).limit(300)
    )
    user = (
        f"Page {page.slug}:\n{page.markdown}\n\nBroken links: {', '.join(link.target for link in broken)}\n\nExisting pages (slug: title):\n{known}"
    )
    markdown = await _ask(router, caller, kb, REPAIR_PROMPT, user, "wiki_repair")
    after = {link.slug for link in wikilinks(markdown)}
    lost = [link for link in links if link.slug in keys and link.slug not in after]
    if lost:  # a working link must not disappear
        markdown += "\n\n## See also\n\n" + "\n".join(f"- [[{link.target}]]" for link in lost)
    new_targets = [s for s in after if s in keys and s not in {link.slug for link in links}]
    still = [link.target for link in broken if link.slug in after]
    removed = [link.target for link in broken if link.slug not in after]
    _save_rewrite(caller, page, markdown, "repair")
    return {
        **pages.detail(Page.get_by_id(page.id)),
        "repaired": True,
        "changedLinks": [{"from": b, "to": t} for b, t in zip(removed, new_targets)],
        "removedLinks": removed[len(new_targets) :],
        "stillBroken": still,
        "restoredLinks": [link.target for link in lost],
    }


def backfill_tokens(limit: int = BACKFILL_BATCH) -> dict[str, Any]:
    """One batch: token counts (about 4 characters a token) of chunks and pages that have none."""
    done: dict[str, int] = {}
    with database.atomic():
        for model, field_name in ((Chunk, "text"), (Page, "markdown")):
            rows = list(model.select(model.id, getattr(model, field_name)).where(model.token_count.is_null()).limit(limit))
            for row in rows:
                text = getattr(row, field_name) or ""
                model.update(token_count=(len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN).where(model.id == row.id).execute()
            done[model.__name__.lower() + "s"] = len(rows)
    remaining = Chunk.select().where(Chunk.token_count.is_null()).count() + Page.select().where(Page.token_count.is_null()).count()
    return {"chunks": done["chunks"], "pages": done["pages"], "remaining": remaining}


def rebuild_overview(caller: Caller, kb_id: int) -> dict[str, Any]:
    """Make sure the KB has its `overview` and `log` pages; the overview's statistics are rewritten."""
    kb = KnowledgeBase.get_or_none(KnowledgeBase.id == kb_id)
    if kb is None:
        raise NotFound("Knowledge base not found")
    live = list(
        Page.select(Page.slug, Page.title, Page.page_type)
        .where((Page.kb == kb.id) & (Page.archived == 0) & Page.slug.not_in(["overview", "log"]))
        .order_by(Page.title)
    )
    types: dict[str, list[Page]] = {}
    for p in live:
        types.setdefault(p.page_type, []).append(p)
    raws = RawMaterial.select().where((RawMaterial.kb == kb.id) & (RawMaterial.removed == 0)).count()
    lines = [f"# {kb.name}", "", kb.description or "", "", "## Statistics", "", f"- Materials: {raws}", f"- Pages: {len(live)}"]
    lines += [f"- {t}: {len(ps)}" for t, ps in sorted(types.items())]
    for t, ps in sorted(types.items()):
        lines += ["", f"## {t.capitalize()} pages", ""] + [f"- [[{p.slug}|{p.title}]]" for p in ps[:50]]
    overview_md = "\n".join(lines).replace("\n\n\n", "\n\n")
    created = []
    with database.atomic():
        for slug, title, page_type, markdown in (
            ("overview", f"{kb.name}: overview", "overview", overview_md),
            ("log", f"{kb.name}: log", "log", f"# {kb.name}: log\n\n"),
        ):
            page = Page.get_or_none((Page.kb == kb.id) & (Page.slug == slug))
            if page is None:
                page = Page.create(
                    kb=kb.id, workspace_id=kb.workspace_id, slug=slug, title=title, page_type=page_type, markdown=markdown, origin="system"
                )
                created.append(slug)
            elif slug == "overview":
                page.markdown, page.version, page.update_time = markdown, page.version + 1, utcnow()
                page.save()
            else:
                continue
            set_links(page)
            search.fts_put_page(page)
        audit.record(caller, "UPDATE", "WIKI_KB", kb.id, f"rebuild overview of {kb.name}", workspace_id=kb.workspace_id)
    return {
        "kbId": str(kb.id),
        "created": created,
        "pageCount": len(live),
        "materialCount": raws,
        "pageTypes": {t: len(ps) for t, ps in types.items()},
        "overviewSlug": "overview",
        "logSlug": "log",
    }
