"""Vectors (normalised float32 blobs, numpy cosine), FTS5 upkeep and the hybrid page search."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from platform_server.db import database, dict_rows
from platform_server.features.wiki.kbs import embedding_model
from platform_server.features.wiki.models import Chunk, KnowledgeBase, Page, PageCitation, RawMaterial
from platform_server.features.wiki.text import snippet
from platform_server.serialize import GIVEN, Fields, ident
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

KEYWORD_WEIGHT = 0.5
VECTOR_WEIGHT = 0.5


def pack(vector: Sequence[float]) -> bytes:
    """A normalised float32 blob."""
    arr = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(arr))
    return (arr / norm if norm > 0 else arr).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def cosine_all(query: bytes, blobs: Sequence[bytes | None]) -> np.ndarray:
    """Cosine of the (normalised) query against each blob of the same dimension (others score 0)."""
    q = unpack(query)
    out = np.zeros(len(blobs), dtype=np.float32)
    same = [i for i, b in enumerate(blobs) if b is not None and len(b) == len(query)]
    if same:
        matrix = np.vstack([unpack(b) for b in (blobs[i] for i in same) if b is not None])
        out[same] = matrix @ q
    return out


# ---- FTS5 upkeep (rowid = the row's id) -------------------------------------------------------


def fts_put_chunk(chunk_id: int, kb_id: int, text: str) -> None:
    database.execute_sql("INSERT INTO wiki_chunk_fts(rowid, text, kb_id) VALUES (?, ?, ?)", (chunk_id, text, kb_id))


def fts_drop_chunks(chunk_ids: list[int]) -> None:
    for i in range(0, len(chunk_ids), 500):
        part = chunk_ids[i : i + 500]
        database.execute_sql(f"DELETE FROM wiki_chunk_fts WHERE rowid IN ({','.join('?' * len(part))})", part)


def fts_put_page(page: Page) -> None:
    database.execute_sql("DELETE FROM wiki_page_fts WHERE rowid = ?", (page.id,))
    database.execute_sql("INSERT INTO wiki_page_fts(rowid, title, body, kb_id) VALUES (?, ?, ?, ?)", (page.id, page.title, page.markdown, page.kb_id))


def fts_drop_pages(page_ids: list[int]) -> None:
    for i in range(0, len(page_ids), 500):
        part = page_ids[i : i + 500]
        database.execute_sql(f"DELETE FROM wiki_page_fts WHERE rowid IN ({','.join('?' * len(part))})", part)


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of the text (each quoted, so no syntax gets through)."""
    words = [w for w in re.findall(r"\w+", text.lower()) if len(w) > 1][:32]
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words)) or None


def _keyword(table: str, kb_ids: list[int], query: str, limit: int) -> dict[int, float]:
    """rowid -> keyword score in (0, 1] (best hit 1) for rows of the given KBs."""
    match = fts_query(query)
    if match is None or not kb_ids:
        return {}
    marks = ",".join("?" * len(kb_ids))
    sql = f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? AND kb_id IN ({marks}) ORDER BY bm25({table}) LIMIT ?"
    rows = database.execute_sql(sql, (match, *kb_ids, limit)).fetchall()
    if not rows:
        return {}
    best = max(-float(r[1]) for r in rows) or 1.0
    return {int(r[0]): max(1e-6, -float(r[1]) / best) for r in rows}


@dataclass
class Hit:
    page: Page
    score: float
    keyword: float
    vector: float


def vector_models(kb_ids: list[int], model_id: int | None) -> dict[int, int | None]:
    """KB id -> the embedding model whose vectors a query vector may meet there: the query's model when
    known, else each KB's current one (vectors of another model, e.g. during a re-embedding, score 0)."""
    if model_id is not None:
        return {kb_id: model_id for kb_id in kb_ids}
    return {kb.id: embedding_model(kb) for kb in KnowledgeBase.select().where(KnowledgeBase.id.in_(kb_ids))}


def search_pages(
    kb_ids: list[int], query: str, query_vec: bytes | None, top_k: int, include_archived: bool = False, model_id: int | None = None
) -> list[Hit]:
    """Hybrid page ranking: normalised BM25 over title+body and the best cosine of the page or its cited chunks.

    `model_id`: the embedding model of `query_vec` (None: each KB's current model)."""
    if not kb_ids:
        return []
    keyword = _keyword("wiki_page_fts", kb_ids, query, 200)
    q = Page.select().where(Page.kb.in_(kb_ids))
    if not include_archived:
        q = q.where(Page.archived == 0)
    pages = list(q)
    vector: dict[int, float] = {}
    if query_vec is not None and pages:
        models = vector_models(kb_ids, model_id)
        blobs = [p.embedding if p.embed_model == models.get(p.kb_id) else None for p in pages]
        for page, score in zip(pages, cosine_all(query_vec, blobs)):
            vector[page.id] = float(score)
        cited = (
            Chunk.select(Chunk.embedding, Chunk.embed_model, Chunk.kb, PageCitation.page.alias("pid"))
            .join(PageCitation, on=(PageCitation.chunk == Chunk.id))
            .where(PageCitation.kb_id.in_(kb_ids))
        )
        rows = dict_rows(cited)
        if rows:
            cited_blobs = [r["embedding"] if r["embed_model"] == models.get(r["kb"]) else None for r in rows]
            for row, score in zip(rows, cosine_all(query_vec, cited_blobs)):
                pid = row["pid"]
                if pid in vector and score > vector[pid]:
                    vector[pid] = float(score)
    hits = []
    for page in pages:
        kw = keyword.get(page.id, 0.0)
        vec = max(0.0, vector.get(page.id, 0.0))
        if kw <= 0 and vec <= 0:
            continue
        hits.append(Hit(page, KEYWORD_WEIGHT * kw + VECTOR_WEIGHT * vec, kw, vec))
    hits.sort(key=lambda h: (-h.score, h.page.slug))
    return hits[:top_k]


# A chunk row with its scores and its raw material's title, which the search passes.
CHUNK_HIT_FIELDS = Fields(
    chunkId=ident("id"),
    rawId=ident("raw_id"),
    rawTitle=GIVEN,
    position="position",
    snippet=GIVEN,
    score=GIVEN,
    keywordScore=GIVEN,
    vectorScore=GIVEN,
)


def search_chunks(kb_ids: list[int], query: str, query_vec: bytes | None, top_k: int, model_id: int | None = None) -> list[dict[str, Any]]:
    """Hybrid ranking of raw chunks, for the preview (`model_id` as in search_pages)."""
    if not kb_ids:
        return []
    keyword = _keyword("wiki_chunk_fts", kb_ids, query, 200)
    rows = list(
        Chunk.select(Chunk.id, Chunk.kb, Chunk.raw, Chunk.text, Chunk.embedding, Chunk.embed_model, Chunk.position).where(Chunk.kb.in_(kb_ids))
    )
    models = vector_models(kb_ids, model_id) if query_vec is not None else {}
    blobs = [r.embedding if r.embed_model == models.get(r.kb_id) else None for r in rows]
    vec = cosine_all(query_vec, blobs) if query_vec is not None and rows else [0.0] * len(rows)
    scored = []
    for row, v in zip(rows, vec):
        kw = keyword.get(row.id, 0.0)
        if kw <= 0 and v <= 0:
            continue
        scored.append((KEYWORD_WEIGHT * kw + VECTOR_WEIGHT * max(0.0, float(v)), kw, float(v), row))
    scored.sort(key=lambda t: -t[0])
    titles = {
        r.id: r.title
        for r in RawMaterial.select(RawMaterial.id, RawMaterial.title).where(RawMaterial.id.in_([t[3].raw_id for t in scored[:top_k]] or [0]))
    }
    return [
        CHUNK_HIT_FIELDS(
            row,
            rawTitle=titles.get(row.raw_id, ""),
            snippet=snippet(row.text, query),
            score=round(s, 4),
            keywordScore=round(kw, 4),
            vectorScore=round(v, 4),
        )
        for s, kw, v, row in scored[:top_k]
    ]


HIT_FIELDS = Fields(
    pageId=lambda h: str(h.page.id),
    kbId=lambda h: str(h.page.kb_id),
    slug=lambda h: h.page.slug,
    title=lambda h: h.page.title,
    pageType=lambda h: h.page.page_type,
    archived=lambda h: h.page.archived,
    snippet=GIVEN,
    score=lambda h: round(h.score, 4),
    keywordScore=lambda h: round(h.keyword, 4),
    vectorScore=lambda h: round(h.vector, 4),
)


def hit_dict(hit: Hit, query: str) -> dict[str, Any]:
    return HIT_FIELDS(hit, snippet=snippet(hit.page.markdown, query))
