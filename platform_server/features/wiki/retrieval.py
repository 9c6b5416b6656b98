"""What an agent's knowledge bases add to a turn: the digest of its KBs and the passages retrieved for
the user's latest message, each with a citation id ([1], [2], ...), within a token budget.

Hybrid search: SQLite FTS5 (BM25) and the stored vectors rank the bound KBs' pages and raw chunks;
the lists are fused by reciprocal rank. Page-type read permissions and the `wiki` feature flag apply
to the digest and the passages alike: a page the agent may not read never reaches its prompt, nor do
the raw chunks such a page was written from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

from platform_server.blocking import run_blocking
from platform_server.db import database
from platform_server.features.models import LLM
from platform_server.features.settings import service as settings
from platform_server.features.wiki import hot_cache, kbs, permissions, search, tool
from platform_server.features.wiki.models import Chunk, KnowledgeBase, Page, PageCitation, RawMaterial
from platform_server.features.wiki.text import snippet
from platform_server.lazy import lazy_import
from platform_server.ports import vectors as vector_port

if TYPE_CHECKING:
    import numpy as np

    from platform_server.platform import Platform
else:
    np = lazy_import("numpy")

RRF_K = 60  # the usual reciprocal-rank constant: a rank's weight is 1 / (60 + rank)
CANDIDATES = 30  # per list (keyword / vector, pages / chunks)
MIN_SIMILARITY = 0.3  # a vector-only candidate below this cosine is not related enough to be sent
PASSAGE_SHARE = 3  # one passage takes at most a third of the budget (so several sources fit)
# Left out of the keyword query: they match nearly every passage, and ranking all of them by BM25 is the
# slow part of a keyword search (the question's other words decide the ranking anyway).
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its me my of on or our so that the "
    "their them there these this to us was we were what when where which who why will with you your".split()
)
HEADER = (
    "## From the knowledge bases\n"
    "Passages retrieved for the user's latest message. Cite the ones you use by their number, e.g. [1]; "
    "if they do not answer the question, say so rather than guess."
)


class QueryVector(NamedTuple):
    """The query's embedding for one KB and the model that made it."""

    vector: bytes
    model_id: int | None


@dataclass
class Knowledge:
    """The prompt text a turn's knowledge adds, and the citations of its passages."""

    prompt: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)


def wiki_on() -> bool:
    return bool(settings.is_enabled("wiki"))


def digest(workspace_id: int, agent_id: int, max_tokens: int) -> str:
    """The digest of the agent's KBs (none while the `wiki` or `wiki.hot_cache.enabled` flag is off), without
    pages it may not read."""
    if not wiki_on() or not settings.is_enabled("wiki.hot_cache.enabled"):
        return ""
    return hot_cache.prompt_for_agent(workspace_id, agent_id, max_tokens)


async def for_turn(platform: Platform, workspace_id: int, agent_id: int, query: str, count: Callable[[str], int]) -> Knowledge:
    """The digest and the passages retrieved for `query` (nothing without KBs or with the `wiki` flag off)."""
    config = platform.config
    if not wiki_on():
        return Knowledge()
    bound = [kb for kb, _ in kbs.kbs_of_agent(workspace_id, agent_id)]
    if not bound:
        return Knowledge()
    text = digest(workspace_id, agent_id, config.wiki_hot_cache_max_tokens)
    budget = config.wiki_retrieval_max_tokens
    if budget <= 0 or not query.strip():
        return Knowledge(prompt=text)
    vectors = await _query_vectors(platform, bound, query)
    found = await run_blocking(passages, bound, agent_id, query, vectors, budget, count)
    return Knowledge(prompt="\n\n".join(p for p in (text, found.prompt) if p), citations=found.citations)


async def _query_vectors(platform: Platform, bound: list[KnowledgeBase], query: str) -> dict[int, QueryVector]:
    """The query's vector per KB with the model that made it, embedded once per embedding model (a KB whose
    model fails has none)."""
    by_model: dict[Any, list[KnowledgeBase]] = {}
    for kb in bound:
        by_model.setdefault(kbs.config_of(kb)["embeddingModelId"], []).append(kb)
    out: dict[int, QueryVector] = {}
    for group in by_model.values():
        got = await tool.embed_query(platform.runtime(LLM), group[0], query)
        if got.vector is not None:
            out.update((kb.id, QueryVector(got.vector, got.model_id)) for kb in group)
    return out


def _ranks(ids: Sequence[tuple[str, int]], scores: dict[tuple[str, int], float]) -> None:
    for rank, key in enumerate(ids):
        scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)


def _keyword(table: str, kb_ids: list[int], query: str) -> list[int]:
    words = [w for w in re.findall(r"\w+", query) if w.lower() not in STOPWORDS]
    match = search.fts_query(" ".join(words) or query)
    if match is None:
        return []
    sql, param = search.keyword_sql(table, len(kb_ids), match, columns="rowid")
    return [int(r[0]) for r in database.execute_sql(sql, (param, *kb_ids, CANDIDATES)).fetchall()]


def _nearest(kind: str, vectors: dict[int, QueryVector]) -> list[int]:
    """Ids of the chunks or (live) pages nearest to their KB's query vector, above MIN_SIMILARITY (through
    the vector port: the in-process matrices or pgvector)."""
    index = vector_port.current()
    scored: list[tuple[float, int]] = []
    for kb_id, query in vectors.items():
        q = search.unpack(query.vector).copy()  # aligned, as the matrices
        if kind == "page":  # a page's own vector (a page of another model scores nothing)
            ids, scores = index.nearest_pages(kb_id, q, query.model_id, CANDIDATES, False, False)
        else:
            ids, scores = index.nearest_chunks(kb_id, q, query.model_id, CANDIDATES)
        scored.extend((float(s), int(i)) for i, s in zip(ids, scores) if s >= MIN_SIMILARITY)
    scored.sort(key=lambda t: -t[0])
    return [row_id for _, row_id in scored[:CANDIDATES]]


def _denied(bound: list[KnowledgeBase], agent_id: int) -> tuple[set[int], set[int]]:
    """Pages the agent may not read, and the KBs whose unlisted types it may not read (`*` denied)."""
    pages: set[int] = set()
    closed: set[int] = set()
    for kb in bound:
        rules = permissions.rules_of(kb.id, agent_id)
        if not any(r.read == "deny" for r in rules.values()):
            continue
        if permissions.decision(rules, "\0", "read") == "deny":
            closed.add(kb.id)
        q = Page.select(Page.id, Page.page_type).where(Page.kb == kb.id)
        pages.update(p.id for p in q if permissions.decision(rules, p.page_type, "read") == "deny")
    return pages, closed


def passages(
    bound: list[KnowledgeBase], agent_id: int, query: str, vectors: dict[int, QueryVector], budget: int, count: Callable[[str], int]
) -> Knowledge:
    """The best passages for `query` within `budget` tokens (blocking: run it off the IOLoop)."""
    kb_ids = [kb.id for kb in bound]
    denied_pages, closed = _denied(bound, agent_id)
    # a raw chunk a denied page was written from carries that page's content: it is left out too
    hidden_chunks: set[int] = set()
    for i in range(0, len(denied_pages), 500):
        part = list(denied_pages)[i : i + 500]
        hidden_chunks.update(r.chunk_id for r in PageCitation.select(PageCitation.chunk).where(PageCitation.page.in_(part)))
    scores: dict[tuple[str, int], float] = {}
    _ranks([("page", i) for i in _keyword("wiki_page_fts", kb_ids, query)], scores)
    _ranks([("material", i) for i in _keyword("wiki_chunk_fts", kb_ids, query)], scores)
    if vectors:
        _ranks([("page", i) for i in _nearest("page", vectors)], scores)
        _ranks([("material", i) for i in _nearest("material", vectors)], scores)
    ranked = sorted(scores, key=lambda key: -scores[key])[: 2 * CANDIDATES]
    found = _load([i for kind, i in ranked if kind == "page"], [i for kind, i in ranked if kind == "material"])
    names = {kb.id: kb.name for kb in bound}
    per_passage = max(64, budget // PASSAGE_SHARE)
    lines: list[str] = [HEADER]
    used = count(HEADER)
    citations: list[dict[str, Any]] = []
    covered: set[int] = set()  # chunks cited by a page already given
    given: list[str] = []  # the passages' texts, flattened: a note and the page made of it say the same
    for kind, row_id in ranked:
        if budget - used < 32:
            break  # full
        item = _passage(found, kind, row_id, denied_pages, hidden_chunks | covered, closed)
        if item is None:
            continue
        title, body, cite = item
        n = len(citations) + 1
        body = _window(body, query, per_passage, count)
        flat = " ".join(re.findall(r"\w+", body.lower()))
        if any(flat in seen or seen in flat for seen in given):
            continue
        block = f"[{n}] {title} ({'page' if kind == 'page' else 'source material'}, knowledge base {names.get(cite['kb'], '')})\n{body}"
        size = count(block)
        if used + size > budget:
            continue  # a smaller passage further down may still fit
        used += size
        lines.append(block)
        given.append(flat)
        if kind == "page":
            covered.update(r.chunk_id for r in PageCitation.select(PageCitation.chunk).where(PageCitation.page == row_id))
        citations.append(_citation(n, kind, cite, title, snippet(body, query), names))
    if not citations:
        return Knowledge()
    return Knowledge(prompt="\n\n".join(lines), citations=citations)


def _load(page_ids: list[int], chunk_ids: list[int]) -> dict[tuple[str, int], Any]:
    """The candidate pages, and chunks with their materials, in three queries."""
    out: dict[tuple[str, int], Any] = {}
    for page in Page.select().where(Page.id.in_(page_ids or [0])):
        out["page", page.id] = page
    chunks = list(Chunk.select(Chunk.id, Chunk.kb, Chunk.raw, Chunk.text).where(Chunk.id.in_(chunk_ids or [0])))
    raws = {
        r.id: r
        for r in RawMaterial.select(RawMaterial.id, RawMaterial.title, RawMaterial.removed).where(
            RawMaterial.id.in_([c.raw_id for c in chunks] or [0])
        )
    }
    for chunk in chunks:
        out["material", chunk.id] = (chunk, raws.get(chunk.raw_id))
    return out


def _passage(
    found: dict[tuple[str, int], Any], kind: str, row_id: int, denied_pages: set[int], hidden_chunks: set[int], closed: set[int]
) -> tuple[str, str, dict[str, Any]] | None:
    """(title, text, what to cite) of one candidate, or None when the agent may not see it."""
    if kind == "page":
        page = found.get(("page", row_id))
        if page is None or page.archived or page.id in denied_pages:
            return None
        return page.title, page.markdown, {"kb": page.kb_id, "page": page}
    if row_id in hidden_chunks or ("material", row_id) not in found:
        return None
    chunk, raw = found["material", row_id]
    if chunk.kb_id in closed or raw is None or raw.removed:
        return None
    return raw.title, chunk.text, {"kb": chunk.kb_id, "chunk": chunk, "raw": raw}


def _window(text: str, query: str, limit: int, count: Callable[[str], int]) -> str:
    """The part of `text` that best matches the query within `limit` tokens (all of it when it fits)."""
    text = text.strip()
    if count(text) <= limit:
        return text
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 2}
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    best = max(range(len(paragraphs)), key=lambda i: sum(w in paragraphs[i].lower() for w in words)) if paragraphs else 0
    out = ""
    for part in paragraphs[best:]:
        candidate = f"{out}\n\n{part}" if out else part
        if count(candidate) > limit:
            break
        out = candidate
    if not out:  # one long paragraph: its head, cut at a word
        out = paragraphs[best] if paragraphs else text
        while out and count(out) > limit:
            out = out[: int(len(out) * 0.8)].rsplit(" ", 1)[0]
        out += " …"
    return out


def _citation(n: int, kind: str, cite: dict[str, Any], title: str, text: str, names: dict[int, str]) -> dict[str, Any]:
    """The `citations` event's (and the stored message's) entry of one passage."""
    kb_id = cite["kb"]
    out: dict[str, Any] = {"id": n, "kind": kind, "kbId": str(kb_id), "kbName": names.get(kb_id, ""), "title": title, "snippet": text}
    if kind == "page":
        page = cite["page"]
        out.update(pageId=str(page.id), slug=page.slug, url=f"#/wiki/{kb_id}/page/{page.slug}")
        out["apiPath"] = f"/api/v1/wiki/knowledge-bases/{kb_id}/pages/{page.slug}"
    else:
        out.update(rawId=str(cite["raw"].id), chunkId=str(cite["chunk"].id), url=f"#/wiki/{kb_id}")
        out["apiPath"] = f"/api/v1/wiki/knowledge-bases/{kb_id}/raw/{cite['raw'].id}"
    return out
