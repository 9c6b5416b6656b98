"""Search shared by the preview route and the `wiki_search` tool agents call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from platform_server.blocking import run_blocking
from platform_server.features.models.errors import failure_text
from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError
from platform_server.features.usage import meter
from platform_server.features.wiki import kbs, permissions, search
from platform_server.features.wiki.models import KnowledgeBase

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter


@dataclass(frozen=True)
class Embedded:
    """A text's vector, the embedding model that made it, or why there is none."""

    vector: bytes | None
    model_id: int | None
    problem: str | None


async def embed_query(router: LlmRouter, kb: KnowledgeBase, text: str) -> Embedded:
    """The text's embedding with the KB's current model (named, so searches and stored pages know which)."""
    model_id = await run_blocking(kbs.embedding_model, kb)
    try:
        with meter.scope("wiki", kb.workspace_id):  # inside a chat turn the turn's source wins
            vectors = await router.embed([text], model_id)
    except Exception as exc:  # noqa: BLE001 - keyword search still answers
        return Embedded(None, None, failure_text(exc, "wiki query embedding"))
    return Embedded(await run_blocking(search.pack, vectors[0]), model_id, None)  # the first use imports numpy: off the loop


async def query_vector(router: LlmRouter, kb: KnowledgeBase, query: str) -> tuple[bytes | None, str | None]:
    """The query's embedding with the KB's model, or (None, reason) when no embedding is available."""
    got = await embed_query(router, kb, query)
    return got.vector, got.problem


async def preview(router: LlmRouter, kb: KnowledgeBase, query: str, top_k: int, include_archived: bool) -> dict[str, Any]:
    """Hybrid keyword + vector results over the KB's pages and raw chunks, with their scores."""
    got = await embed_query(router, kb, query)
    vec, problem = got.vector, got.problem
    hits = await run_blocking(search.search_pages, [kb.id], query, vec, top_k, include_archived, got.model_id)
    chunks = await run_blocking(search.search_chunks, [kb.id], query, vec, top_k, got.model_id)
    return {
        "query": query,
        "topK": top_k,
        "results": [search.hit_dict(h, query) for h in hits],
        "chunks": chunks,
        "vectorSearch": vec is not None,
        "vectorError": problem,
    }


async def run_wiki_search(args: dict[str, Any], ctx: ToolContext, router: LlmRouter) -> str:
    query = str(args.get("query") or "").strip()
    if not query:
        raise ToolError("query must not be empty")
    top_k = max(1, min(int(args.get("topK") or 5), 20))
    bound = [kb for kb, _ in kbs.kbs_of_agent(ctx.workspace_id, ctx.agent_id)]
    if not bound:
        raise ToolError("No knowledge base is bound to this agent")
    got = await embed_query(router, bound[0], query)  # only vectors of this model are compared, in every KB
    hits = await run_blocking(search.search_pages, [kb.id for kb in bound], query, got.vector, 4 * top_k, False, got.model_id)
    rules = {kb.id: permissions.rules_of(kb.id, ctx.agent_id) for kb in bound}
    hits = [h for h in hits if permissions.decision(rules[h.page.kb_id], h.page.page_type, "read") != "deny"][:top_k]
    if not hits:
        return f"No wiki pages match '{query}'."
    names = {kb.id: kb.name for kb in bound}
    lines = []
    for h in hits:
        p = h.page
        lines.append(f"## {p.title}\nslug: {p.slug} | knowledge base: {names.get(p.kb_id, '')} | score: {h.score:.3f}\n{p.markdown[:1500]}")
    return "\n\n".join(lines)


def definition(router: LlmRouter) -> ToolDefinition:
    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        return await run_wiki_search(args, ctx, router)

    return ToolDefinition(
        name="wiki_search",
        description="Search the knowledge bases bound to this agent; returns the best wiki pages with their slugs.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "topK": {"type": "integer", "description": "How many pages (1-20, default 5)"},
            },
            "required": ["query"],
        },
        run=run,
        source="wiki",
        feature="wiki",
    )
