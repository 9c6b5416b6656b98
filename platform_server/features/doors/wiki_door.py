"""The wiki through the MCP door: search and read over the knowledge bases the caller may read, with citations.

A user may read a KB's pages when they hold any role (viewer or above) in its workspace: the REST page routes'
floor. Every answer names its sources by `wiki://<kbId>/<slug>`, the URI of the page as an MCP resource."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from platform_server.blocking import run_blocking
from platform_server.features.doors import agents_door
from platform_server.features.models import LLM
from platform_server.features.usage import meter
from platform_server.features.wiki import kbs, pages, search, tool
from platform_server.features.wiki.models import KnowledgeBase, Page
from platform_server.web.context import Caller, Principal
from platform_server.web.errors import BadRequest, NotFound

if TYPE_CHECKING:
    from platform_server.platform import Platform

SOURCE = "mcp"  # the usage source of model calls made through the MCP door (query embeddings, agent turns)
MAX_LISTED = 500  # pages offered in `resources/list`; the rest are reached by search or by URI


def uri(kb_id: int, slug: str) -> str:
    return f"wiki://{kb_id}/{slug}"


def readable(principal: Principal, only: int | None) -> list[KnowledgeBase]:
    roles = agents_door.workspace_roles(principal, only)
    return [kb for ws in sorted(roles) for kb in kbs.workspace_kbs(ws).order_by(KnowledgeBase.id)]


def _kb(principal: Principal, only: int | None, kb_id: str) -> tuple[Caller, KnowledgeBase]:
    """The KB and the caller acting in its workspace; 404 when unknown or not readable (never told apart)."""
    roles = agents_door.workspace_roles(principal, only)
    row = KnowledgeBase.get_or_none(KnowledgeBase.id == int(kb_id)) if kb_id.strip().isdigit() and int(kb_id) < 2**63 else None
    if row is None or int(row.workspace_id) not in roles:
        raise NotFound("Knowledge base not found")
    caller = Caller(principal, int(row.workspace_id), roles[int(row.workspace_id)])
    return caller, kbs.get_kb(caller, int(row.id))


async def search_text(platform: Platform, principal: Principal, only: int | None, query: str, kb_id: str | None, top_k: int) -> str:
    """The best pages for `query` with a snippet each, numbered, and their sources listed as citations."""
    if not query.strip():
        raise BadRequest("query: must not be blank")
    chosen = [_kb(principal, only, kb_id)[1]] if kb_id else readable(principal, only)
    if not chosen:
        return "No knowledge base is readable with this token."
    top_k = max(1, min(top_k, 20))
    with meter.scope(SOURCE, int(chosen[0].workspace_id), principal.user_id):
        got = await tool.embed_query(platform.runtime(LLM), chosen[0], query)  # vectors of this model are compared, in every KB
    hits = await run_blocking(search.search_pages, [kb.id for kb in chosen], query, got.vector, top_k, False, got.model_id)
    if not hits:
        return f"No wiki pages match '{query}'."
    names = {kb.id: kb.name for kb in chosen}
    body, sources = [], []
    for n, hit in enumerate(hits, 1):
        page = hit.page
        snippet = search.hit_dict(hit, query).get("snippet") or page.markdown[:400]
        body.append(f"[{n}] {page.title} ({names.get(page.kb_id, '')})\n{snippet}")
        sources.append(f"[{n}] {page.title}: {uri(page.kb_id, page.slug)}")
    return "\n\n".join(body) + "\n\nSources:\n" + "\n".join(sources)


def read_text(principal: Principal, only: int | None, kb_id: str, slug: str) -> str:
    """A page's markdown, then the source passages it cites."""
    caller, kb = _kb(principal, only, kb_id)
    page = pages.get_page(kb, slug)
    cited = pages.citations(caller, int(kb.id), int(page.id))
    text = f"# {page.title}\n\n{page.markdown}\n\nSource: {uri(kb.id, page.slug)}"
    if cited:
        text += "\n\nCited passages:\n" + "\n".join(f"- {c['rawTitle']} (part {c['position']}): {str(c['text'])[:300]}" for c in cited)
    return text


def listed(principal: Principal, only: int | None) -> list[dict[str, Any]]:
    """The readable pages as MCP resources (`uri`, `name`, `description`), at most MAX_LISTED."""
    chosen = {kb.id: kb.name for kb in readable(principal, only)}
    if not chosen:
        return []
    rows = Page.select(Page.kb, Page.slug, Page.title).where(Page.kb.in_(list(chosen)) & (Page.archived == 0))
    return [
        {"uri": uri(p.kb_id, p.slug), "name": p.title, "description": f"Wiki page in {chosen[p.kb_id]}"}
        for p in rows.order_by(Page.kb, Page.title).limit(MAX_LISTED)
    ]
